"""Edits and mixed documents on the real generator: SmolLM2-135M on vLLM with our processor.

Generates once (under the vLLM lock) and caches every text in
``$PROVENANCE_DATA_DIR/robustness/generations.json``; later runs only detect. For creative and
code prompts at T=1 and at T=0.7/top-p 0.9 (``--prompts`` per cell, 200 tokens each):

1. Edits: 10/20/30% random token substitutions, insertions and deletions (replacement tokens
   drawn from real prose), and a paraphrase of each text by the same model without
   watermark. Detection rate at p <= 0.01 of the global test and of the localized decision
   (``detector.evidence.localize``: global test and span scan, Bonferroni).
2. Mixed documents: the first 120 tokens of each text inside ~1,200 human tokens of prose.
   Rates of the 120 tokens tested alone, of the global test on the document and of the
   localized decision on it (target: localized >= 0.8x alone).
3. False positives in the same run: unwatermarked generations of the same prompts (all edit
   kinds too) and human-only documents of prose, under the same key.
4. ``--oracle``: beside the edit tables, tests that know which scored tokens are intact (the
   token and its w context tokens unedited, from the edit's record): Gamma, the weighted
   test with the product's reading of the unedited text and with the sampling distribution
   (the prompt, temperature and top-p), and the Neyman-Pearson likelihood ratio at the
   drawn token's sampling probability. Not deployable: they bound what a statistic that
   cannot recover edited contexts can reach.
5. ``--masked RATE``: at RATE substitutions, the deployable tests, the oracle and tests on
   the tokens that no suspected edit (a token the model reads below a probability TAU)
   touches, on a development and a held-out half of the prompts.

Run: ``flock /tmp/provenance-vllm.lock python benchmarks/bench_robustness.py [--prompts 12]``
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from benchmarks.bench_generate import (  # noqa: E402
    KEY,
    _backend,
    _key_file,
    _requests,
    coding_prompts,
    creative_prompts,
)
from detector.core.config import as_key_config  # noqa: E402

THRESHOLD = 0.01
TOKENS = 200
SAMPLINGS = {"T=1": (1.0, 1.0), "T=0.7 top-p 0.9": (0.7, 0.9)}
RATES = (0.1, 0.2, 0.3)
KINDS = ("substitute", "insert", "delete")
CELLS = tuple(f"{kind} {label}" for kind in ("creative", "code") for label in SAMPLINGS)
PLANT = 120
HUMAN_AROUND = 1200


def cache_path() -> Path:
    from detector.paths import data_dir

    return data_dir() / "robustness" / "generations.json"


def _paraphrase_requests(texts: list[str]) -> list[Any]:
    from generator.core import SamplingSettings
    from generator.types import GenerationRequest

    return [
        GenerationRequest(
            messages=(
                {
                    "role": "user",
                    "content": f"Rewrite the following text in your own words:\n\n{t}",
                },
            ),
            max_tokens=TOKENS + 50,
            sampling=SamplingSettings(temperature=0.7, top_p=0.9),
            watermark=False,
        )
        for t in texts
    ]


def generate(
    prompts: int,
    max_cells: int | None = None,
    only: list[str] | None = None,
    paraphrase: bool = True,
) -> dict[str, Any]:
    """Every cell's watermarked and plain generations and the paraphrases (cached per cell).

    ``max_cells`` generates at most that many missing cells and returns, so that a long run can
    hold the vLLM lock in chunks; the cache keeps what is done. ``only`` restricts the run (and
    the cells returned) to the cells so named. Without ``paraphrase`` the cells generated now
    get no paraphrases (an empty list).
    """
    path = cache_path()
    cells: dict[str, Any] = {}
    if path.is_file():
        cached = json.loads(path.read_text())
        if cached.get("prompts") == prompts:
            cells = cached["cells"]
    plan = [
        (kind, items, label, sampling)
        for kind, items in (
            ("creative", creative_prompts(prompts)),
            ("code", coding_prompts(prompts)),
        )
        for label, sampling in SAMPLINGS.items()
        if f"{kind} {label}" not in cells and (only is None or f"{kind} {label}" in only)
    ][:max_cells]
    if plan:
        backend = _backend("vllm", _key_file())
        t0 = time.perf_counter()
        try:
            for kind, items, label, (temperature, top_p) in plan:
                marked = backend.generate(_requests(items, TOKENS, True, temperature, top_p))
                plain = backend.generate(_requests(items, TOKENS, False, temperature, top_p))
                para = (
                    backend.generate(_paraphrase_requests([g.text for g in marked]))
                    if paraphrase
                    else []
                )
                cells[f"{kind} {label}"] = {
                    "marked": [list(g.token_ids) for g in marked],
                    "plain": [list(g.token_ids) for g in plain],
                    "paraphrase": [g.text for g in para],
                }
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps({"prompts": prompts, "tokens": TOKENS, "cells": cells}))
                print(f"generated {kind} {label}: {time.perf_counter() - t0:.0f}s", flush=True)
        finally:
            backend.close()
    chosen = {k: v for k, v in cells.items() if only is None or k in only}
    return {"prompts": prompts, "tokens": TOKENS, "cells": chosen}


def edit_tracked(
    ids: np.ndarray, kind: str, rate: float, pool: np.ndarray, rng: Any
) -> tuple[np.ndarray, np.ndarray]:
    """``rate`` of the positions substituted, preceded by an insertion, or deleted; with the
    edit's record: the position in ``ids`` of every token of the result, -1 where the token
    is new (substituted or inserted)."""
    hit = rng.random(ids.shape[0]) < rate
    fresh = pool[rng.integers(0, pool.shape[0], ids.shape[0])]
    where = np.arange(ids.shape[0])
    if kind == "substitute":
        return np.where(hit, fresh, ids), np.where(hit, -1, where)
    if kind == "delete":
        return ids[~hit], where[~hit]
    out, origin = [], []
    for i, (token, h, new) in enumerate(zip(ids, hit, fresh, strict=True)):
        if h:
            out.append(new)
            origin.append(-1)
        out.append(token)
        origin.append(i)
    return np.asarray(out, np.int64), np.asarray(origin, np.int64)


def edit(ids: np.ndarray, kind: str, rate: float, pool: np.ndarray, rng: Any) -> np.ndarray:
    """``rate`` of the positions substituted, preceded by an insertion, or deleted."""
    return edit_tracked(ids, kind, rate, pool, rng)[0]


def intact_mask(origin: np.ndarray, width: int = 4) -> np.ndarray:
    """Where an edited text's token and its ``width`` context tokens are those of the source
    at the same relative places (``origin`` as ``edit_tracked`` records it): the token's
    keyed draw is the generator's. The first tokens' contexts reach into the left padding,
    which matches only where the source's does too (``origin[j] == j``)."""
    origin = np.asarray(origin, np.int64)
    n = origin.shape[0]
    ok = origin >= 0
    # New tokens never match: not even a context position that the source pads.
    placed = np.where(ok, origin, np.iinfo(np.int64).min)
    for k in range(1, width + 1):
        before = np.concatenate([np.arange(-k, 0), placed[: max(n - k, 0)]])[:n]
        ok &= before == origin - k
    return ok


BASE_COLUMNS = ("global", "localized", "robust", "combined")
# With --assist: SmolLM2's E[s] per token (detector.reading.model, as the product reads it: T=1,
# BOS).
# "assisted unmasked": the assisted decision with the observed-token weights of every token,
# suspected edits included (the library's rule before suspected edits weighed 0).
# "assisted localized": the web product's verdict with a model, Bonferroni over the localized
# decision's document p-value and the weighted test.
ASSISTED_COLUMNS = (
    "weighted",
    "assisted",
    "assisted unmasked",
    "w-robust",
    "assisted+w-robust",
    "assisted localized",
)
COLUMNS: tuple[str, ...] = BASE_COLUMNS
_assist: dict[str, Any] = {}  # "model": the ModelAssist, "cache": E[s] per text
_oracle: dict[str, Any] = {}  # "model": the ModelAssist that reads the unedited texts


def expected_of(docs: list[np.ndarray]) -> list[Any]:
    """The model's reading (``detector.reading.model.ModelReading``: ``E[s]`` and the observed
    token's ``f(q_x)``) of every token of every text, as the product reads it (T=1), cached:
    the keys share them."""
    cache = _assist["cache"]
    missing = [d for d in docs if d.tobytes() not in cache]
    for d, read in zip(missing, _assist["model"].read(missing), strict=True):
        cache[d.tobytes()] = read
    return [cache[d.tobytes()] for d in docs]


def decisions(ids: np.ndarray, key: int = KEY, expected: Any = None) -> tuple:
    """At THRESHOLD under the benchmark key: the global test, the localized decision, the
    edit-robust statistic alone (``benchmarks.research.robust``) and the three combined
    (Bonferroni).
    With the model's reading ``expected`` (a ``ModelReading``), also: the weighted test alone
    and the product's assisted decision (Gamma and weighted, Bonferroni x2), both on the
    product's observed-token weights, the weighted edit-robust test
    (``benchmarks.research.robust_weighted``, on ``E[s]``) alone, and Gamma, weighted and weighted
    edit-robust combined (Bonferroni x3)."""
    from benchmarks.research.robust import robust_scores_log10_p
    from benchmarks.research.robust_weighted import weighted_robust_test
    from detector.evidence.detection import detect_config
    from detector.evidence.localize import exp_scores, localize_ids
    from detector.evidence.weighted import observed_weights

    config = as_key_config(key)
    loc = localize_ids(ids, key, threshold=THRESHOLD)
    scores = exp_scores(loc.detection, config)
    _, robust_lp = robust_scores_log10_p(scores)
    level = np.log10(THRESHOLD)
    combined = min(loc.global_log10_p, loc.scan_log10_p, robust_lp) + np.log10(3.0)
    out = (
        loc.detection.log10_p <= level,
        loc.is_watermarked,
        robust_lp <= level,
        combined <= level,
    )
    if expected is None:
        return out
    det = detect_config(
        ids,
        config,
        THRESHOLD,
        expected_scores=expected.expected,
        observed_scores=expected.observed,
    )
    assert det.weighted is not None
    w = observed_weights(expected.observed)[det.scored_mask]
    unmasked = weighted_log_sf(w, float((w * scores).sum())) / math.log(10.0)
    wr = weighted_robust_test(scores, det.weighted.expected_scores)
    three = min(det.log10_p, det.weighted.log10_p, wr.log10_p) + np.log10(3.0)
    return out + (
        det.weighted.log10_p <= level,
        det.decision_log10_p <= level,
        min(det.log10_p, unmasked) + np.log10(2.0) <= level,
        wr.log10_p <= level,
        three <= level,
        min(loc.log10_p, det.weighted.log10_p) + np.log10(2.0) <= level,
    )


def decision_matrix(docs: list[np.ndarray], key: int = KEY) -> np.ndarray:
    """``decisions`` of every text: ``[len(docs), len(COLUMNS)]`` booleans."""
    expected: list[np.ndarray | None] = [None] * len(docs)
    if _assist:
        expected = list(expected_of(docs))
    got = [decisions(d, key, e) for d, e in zip(docs, expected, strict=True)]
    return np.array(got, bool).reshape(-1, len(COLUMNS))


def rates(docs: list[np.ndarray], key: int = KEY) -> tuple[float, ...]:
    return tuple(float(v) for v in decision_matrix(docs, key).mean(0))


@dataclass(frozen=True)
class SourceReads:
    """What the oracle knows of each token of an unedited source text (``read_sources``)."""

    expected: np.ndarray  # E[s] as the product reads it (T=1, BOS, no prompt)
    expected_sampling: np.ndarray  # E[s] of the distribution sampled from (prompt, T, top-p)
    q: np.ndarray  # that distribution's probability of the token that was drawn
    # f(q_x) of each token as the product reads it (T=1, BOS, no prompt): the observed-token
    # weights of the library's model-assisted decision; None where not read.
    observed: np.ndarray | None = None


ORACLE_COLUMNS = (
    "oracle Gamma",
    "oracle weighted",
    "oracle weighted@sampling",
    "oracle LR",
    "oracle observed",
)
ORACLE: tuple[str, ...] = ()  # ORACLE_COLUMNS with --oracle
LR_FLOOR = 1e-8  # the oracle likelihood ratio's smallest p-value (a lower tail as 1 - upper)
Q_FLOOR = 1e-4  # a drawn token's probability read below this (numerics of top-p) is raised


def read_sources(
    assist: Any, prompts: list[str], texts: list[np.ndarray], temperature: float, top_p: float
) -> list[SourceReads]:
    """The model's reading of every unedited text: as the product reads it, and after its
    chat prompt at the sampling temperature and top-p (the distribution the generator drew
    from, up to vLLM's numerics)."""
    import torch
    from transformers import AutoTokenizer

    from detector.core.sampling import top_k_top_p_mask
    from detector.reading.model import expected_score_of

    tok = AutoTokenizer.from_pretrained(str(assist.path), local_files_only=True)
    product = assist.read(texts)
    out = []
    for prompt, ids, reading in zip(prompts, texts, product, strict=True):
        expected = reading.expected
        head = list(
            tok.apply_chat_template(
                [{"role": "user", "content": prompt}],
                add_generation_prompt=True,
                tokenize=True,
                return_dict=False,
            )
        )
        seq = torch.tensor([head + [int(i) for i in ids]])
        with torch.inference_mode():
            logits = assist.model(input_ids=seq).logits[0, len(head) - 1 : -1]
            logits = logits.to(torch.float64) / temperature
            if top_p < 1.0:
                logits = top_k_top_p_mask(logits, None, top_p)
            probs = logits.softmax(dim=-1)
            sampled = 1.0 + expected_score_of(probs).numpy()
            q = probs[torch.arange(len(ids)), torch.as_tensor(ids)].numpy()
        out.append(SourceReads(expected, sampled, np.maximum(q, Q_FLOOR), reading.observed))
    return out


def weighted_log_sf(weights: np.ndarray, x: float) -> float:
    """Natural log of ``P[sum w_i E_i >= x]`` (``detector.evidence.weighted.weighted_sf``); where
    its
    closed form for a few distinct weights loses its precision (clustered weights far in the
    tail), the saddlepoint below 1e-30 and the Laplace inversion above, as for many weights."""
    from detector.evidence import weighted as wt

    try:
        return wt.weighted_sf(weights, x)[1] * math.log(10.0)
    except ArithmeticError:
        approx = wt.log_sf_saddlepoint(weights, x)
        return (
            approx
            if approx <= wt.EXACT_ABOVE_LOG10 * math.log(10.0)
            else wt.log_sf_exact(weights, x)
        )


def oracle_log10_ps(
    ids: np.ndarray, origin: np.ndarray, reads: SourceReads, key: int = KEY
) -> tuple[float, float, float, float, float]:
    """log10 p of the oracle tests on the scored tokens that ``intact_mask`` keeps (not
    deployable: they know the edits): the Gamma test; the weighted test (``E[s] - 1``
    weights, exact tail) with the product's reading of the unedited text and with the
    sampling distribution's; the Neyman-Pearson test of the Gumbel-max likelihood ratio
    ``f1/f0(s) = (1/q) u^(1/q - 1)`` (``u = 1 - e^-s``) at the drawn token's sampling
    probability ``q``: reject for small ``T = sum (1/q - 1)(-log u)``, whose null is a
    weighted sum of i.i.d. Exp(1), p-value ``P0[T <= t] = 1 - P0[T > t]``. The intact mask
    and the reads depend on the text only, never on the key: every test keeps its size. Last,
    the weighted test on the library's observed-token weights ``min(f(q_x) - 1, 2)`` of the
    product's reading (0.0 when ``reads.observed`` is None)."""
    from detector.core.stats import gamma_upper_log10
    from detector.evidence.detection import detect_config
    from detector.evidence.localize import exp_scores
    from detector.evidence.weighted import clean_weights, observed_weights

    config = as_key_config(key)
    if config.algorithm != "gumbel":
        raise ValueError("the oracle's likelihood ratio is that of the plain Gumbel-max score")
    det = detect_config(ids, config, THRESHOLD)
    scored = det.scored_mask
    keep = intact_mask(origin, config.context_width)[scored]
    s = exp_scores(det, config)[keep]
    src = np.asarray(origin)[scored][keep]
    gamma = gamma_upper_log10(float(s.size), float(s.sum()))

    def weighted(expected: np.ndarray, w: np.ndarray | None = None) -> float:
        w = np.maximum(expected[src] - 1.0, 0.0) if w is None else w
        return min(0.0, weighted_log_sf(w, float((w * s).sum())) / math.log(10.0))

    c = 1.0 / reads.q[src] - 1.0
    lr = 0.0
    if clean_weights(c).size:
        t = float((c * -np.log(-np.expm1(-np.maximum(s, 1e-300)))).sum())
        # 1 - P0[T > t] is resolved to about 1e-9 (the inversion's accuracy): floored at
        # LR_FLOOR, which only makes the p-value larger.
        lr = min(0.0, math.log10(max(-math.expm1(weighted_log_sf(c, t)), LR_FLOOR)))
    observed = 0.0
    if reads.observed is not None:
        observed = weighted(reads.expected, observed_weights(reads.observed[src]))
    return gamma, weighted(reads.expected), weighted(reads.expected_sampling), lr, observed


def oracle_rates(
    docs: list[np.ndarray], origins: list[np.ndarray], reads: list[SourceReads]
) -> tuple[float, ...]:
    level = math.log10(THRESHOLD)
    got = [
        [v <= level for v in oracle_log10_ps(d, o, r)]
        for d, o, r in zip(docs, origins, reads, strict=True)
    ]
    return tuple(float(v) for v in np.array(got, bool).reshape(-1, len(ORACLE)).mean(0))


def edit_table(
    cells: dict[str, Any],
    pool: np.ndarray,
    tok: Any,
    draws: int = 1,
    kinds: tuple[str, ...] = KINDS,
    plain_draws: int | None = None,
    edit_rates: tuple[float, ...] = RATES,
    clean: bool = True,
) -> list[dict[str, Any]]:
    """Every cell's rates after each edit; ``draws`` independent edits of every text. With
    ``ORACLE`` set (``_oracle["model"]`` a ``ModelAssist``), also the oracle columns."""
    rows = []
    for name, cell in cells.items():
        rng = np.random.default_rng(7)
        marked = [np.asarray(x, np.int64) for x in cell["marked"]]
        plain = [np.asarray(x, np.int64) for x in cell["plain"]]
        sources: dict[str, list[SourceReads]] = {}
        if ORACLE:
            kind_of, label = name.split(" ", 1)
            prompts = (creative_prompts if kind_of == "creative" else coding_prompts)(len(marked))
            t0 = time.perf_counter()
            sources = {
                "marked": read_sources(_oracle["model"], prompts, marked, *SAMPLINGS[label]),
                "plain": read_sources(_oracle["model"], prompts, plain, *SAMPLINGS[label]),
            }
            low = sum(int((r.q <= Q_FLOOR).sum()) for v in sources.values() for r in v)
            print(
                f"read {2 * len(marked)} source texts in {time.perf_counter() - t0:.0f}s "
                f"({low} drawn tokens read at q <= {Q_FLOOR})",
                flush=True,
            )
        # Per variant and side: the texts, each one's edit record and its source's index.
        variants: dict[str, dict[str, tuple[list[np.ndarray], list[np.ndarray], list[int]]]] = {}
        if clean:
            variants["clean"] = {
                side: (texts, [np.arange(x.shape[0]) for x in texts], list(range(len(texts))))
                for side, texts in (("marked", marked), ("plain", plain))
            }
        for kind in kinds:
            for rate in edit_rates:
                entry = {}
                for side, texts, times in (
                    ("marked", marked, draws),
                    ("plain", plain, draws if plain_draws is None else plain_draws),
                ):
                    done = [
                        edit_tracked(x, kind, rate, pool, rng) for _ in range(times) for x in texts
                    ]
                    entry[side] = (
                        [d[0] for d in done],
                        [d[1] for d in done],
                        [i for _ in range(times) for i in range(len(texts))],
                    )
                variants[f"{kind} {int(rate * 100)}%"] = entry
        if cell["paraphrase"]:
            para = [np.asarray(tok.encode(t), np.int64) for t in cell["paraphrase"]]
            variants["paraphrase"] = {"marked": (para, [], []), "plain": ([], [], [])}
        nan_cols = (float("nan"),) * len(COLUMNS)
        nan_oracle = (float("nan"),) * len(ORACLE)
        for variant, entry in variants.items():
            pos, pos_origin, pos_src = entry["marked"]
            neg, neg_origin, neg_src = entry["plain"]
            got = decision_matrix(pos)
            hit = tuple(float(v) for v in got.mean(0))
            fpr = rates(neg) if neg else nan_cols
            o_hit = o_fpr = nan_oracle
            if ORACLE and pos_origin:
                reads = sources["marked"]
                o_hit = oracle_rates(pos, pos_origin, [reads[i] for i in pos_src])
            if ORACLE and neg_origin:
                reads = sources["plain"]
                o_fpr = oracle_rates(neg, neg_origin, [reads[i] for i in neg_src])
            rows.append(
                {"cell": name, "edit": variant, "n": len(pos), "n_fpr": len(neg)}
                | dict(zip(COLUMNS + ORACLE, hit + o_hit, strict=True))
                | {f"fpr_{c}": v for c, v in zip(COLUMNS + ORACLE, fpr + o_fpr, strict=True)}
            )
            print(
                f"| {name} | {variant} | {len(pos)} | "
                + " | ".join(_pct(v) for v in hit + o_hit)
                + " | "
                + " | ".join(_pct(v) for v in fpr + o_fpr)
                + " |",
                flush=True,
            )
            if pos_src and max(pos_src) > 0:  # the prompts' second half (their own rates)
                later = np.asarray(pos_src) >= (max(pos_src) + 1) // 2
                rows[-1]["held_out"] = dict(zip(COLUMNS, got[later].mean(0).tolist(), strict=True))
                print(
                    f"  (second half of the prompts, {int(later.sum())} texts: "
                    + ", ".join(f"{c} {_pct(v)}" for c, v in rows[-1]["held_out"].items())
                    + ")",
                    flush=True,
                )
    return rows


def _pct(v: float) -> str:
    return "–" if math.isnan(v) else f"{100 * v:.1f}"


# Suspected edits: a token the model gives probability below TAU, read as the product reads
# the text (temperature 1, BOS, no prompt), is taken for an edit; a scored token is kept when
# it and its w context tokens are unsuspected. TAUS is the grid the development split chooses
# from.
TAUS = (1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2)


def read_observed(
    model: Any, docs: list[np.ndarray], temperature: float = 1.0, top_p: float = 1.0
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``(q, E[s], E[s] at temperature and top-p)`` of every token of every text as the
    product reads it (after the model's BOS token, no prompt): the model's probability at
    temperature 1 of the token that is there, the expected score of a keyed draw at that
    position (``detector.reading.model``'s ``E[s]``), and the same at the given sampling (what the
    product reads when a key states its temperature and top-p)."""
    import torch

    from detector.core.sampling import top_k_top_p_mask
    from detector.reading.model import expected_score_of

    bos = getattr(model.model.config, "bos_token_id", None)
    head = [int(bos)] if isinstance(bos, int) else []
    out = []
    for ids in docs:
        seq = torch.tensor([head + [int(i) for i in ids]])
        with torch.inference_mode():
            logits = model.model(input_ids=seq).logits[0].to(torch.float64)
            logits = logits[len(head) - 1 : -1] if head else logits[:-1]
            probs = logits.softmax(dim=-1)
            e = 1.0 + expected_score_of(probs).numpy()
            q = probs[torch.arange(probs.shape[0]), torch.as_tensor(ids[-probs.shape[0] :])]
            sampled = logits / temperature
            if top_p < 1.0:
                sampled = top_k_top_p_mask(sampled, None, top_p)
            e_s = 1.0 + expected_score_of(sampled.softmax(dim=-1)).numpy()
        q_all, e_all, es_all = np.ones(len(ids)), np.ones(len(ids)), np.ones(len(ids))
        q_all[len(ids) - q.shape[0] :] = q.numpy()
        e_all[len(ids) - e.shape[0] :] = e
        es_all[len(ids) - e_s.shape[0] :] = e_s
        out.append((q_all, e_all, es_all))
    return out


def suspected_intact(q: np.ndarray, tau: float, width: int = 4) -> np.ndarray:
    """Tokens that neither are, nor follow within ``width`` tokens, a token of probability
    below ``tau``: the deployable stand-in for ``intact_mask``."""
    from detector.evidence.weighted import with_contexts

    return ~with_contexts(np.asarray(q) < tau, width)


def masked_log10_ps(
    ids: np.ndarray,
    q: np.ndarray,
    expected: np.ndarray,
    key: int = KEY,
    taus: tuple[float, ...] = TAUS,
) -> tuple[np.ndarray, np.ndarray]:
    """log10 p of the Gamma test and of the weighted test (``E[s] - 1`` weights, exact tail)
    on the scored tokens that ``suspected_intact`` keeps, at every ``tau``. The kept set and
    the weights depend on the text only, never on the key: under the null the kept scores
    are i.i.d. Exp(1) and both tails are exact."""
    from detector.core.stats import gamma_upper_log10
    from detector.evidence.detection import detect_config
    from detector.evidence.localize import exp_scores

    config = as_key_config(key)
    det = detect_config(ids, config, THRESHOLD)
    scored = det.scored_mask
    s_all = exp_scores(det, config)
    w_all = np.maximum(np.asarray(expected)[scored] - 1.0, 0.0)
    gamma, weighted = [], []
    for tau in taus:
        keep = suspected_intact(np.asarray(q), tau, config.context_width)[scored]
        s, w = s_all[keep], w_all[keep]
        gamma.append(gamma_upper_log10(float(s.size), float(s.sum())))
        weighted.append(min(0.0, weighted_log_sf(w, float((w * s).sum())) / math.log(10.0)))
    return np.asarray(gamma), np.asarray(weighted)


def _reject_rates(log10_ps: list[list[float]], level: float, columns: int) -> np.ndarray:
    """Share of rows at or below ``level`` per column; NaN where a column was not computed."""
    if not log10_ps:
        return np.full(columns, np.nan)
    a = np.asarray(log10_ps, np.float64)
    return np.where(np.isnan(a).all(0), np.nan, (a <= level).mean(0))


def masked_table(
    cells: dict[str, Any],
    pool: np.ndarray,
    human: np.ndarray,
    draws: int,
    rate: float,
    human_docs: int,
    human_keys: int,
) -> list[dict[str, Any]]:
    """Deployable statistics, the oracle and the suspected-edit tests on the same edited
    texts (``rate`` substitutions, ``draws`` per text). The development split is the first
    half of the prompts, the held-out split the second half; the false-positive rates are
    the unwatermarked generations of every prompt (edited alike) and human prose pieces
    (``human_docs`` x ``human_keys`` keys, each piece read once)."""
    from benchmarks.research.robust import robust_scores_log10_p
    from benchmarks.research.robust_weighted import weighted_robust_test
    from detector.evidence.detection import detect_config
    from detector.evidence.localize import exp_scores

    model = _oracle["model"]
    level = math.log10(THRESHOLD)
    names = (
        ["global", "robust", "weighted", "w-robust", "weighted@sampling"]
        + ["oracle Gamma", "oracle LR"]
        + [f"masked Gamma {t:g}" for t in TAUS]
        + [f"masked weighted {t:g}" for t in TAUS]
        + [f"masked weighted@sampling {t:g}" for t in TAUS]
    )

    def deployable(ids: np.ndarray, read: tuple, key: int) -> list[float]:
        _, e, e_s = read
        config = as_key_config(key)
        det = detect_config(ids, config, THRESHOLD, expected_scores=e)
        at_sampling = detect_config(ids, config, THRESHOLD, expected_scores=e_s)
        assert det.weighted is not None and at_sampling.weighted is not None
        scores = exp_scores(det, config)
        wr = weighted_robust_test(scores, det.weighted.expected_scores)
        _, robust_lp = robust_scores_log10_p(scores)
        return [
            det.log10_p,
            robust_lp,
            det.weighted.log10_p,
            wr.log10_p,
            at_sampling.weighted.log10_p,
        ]

    def masked(ids: np.ndarray, read: tuple, key: int) -> list[float]:
        q, e, e_s = read
        g, w = masked_log10_ps(ids, q, e, key)
        _, w_s = masked_log10_ps(ids, q, e_s, key)
        return [*g, *w, *w_s]

    no_oracle = [float("nan")] * 2

    rows = []
    for name, cell in cells.items():
        kind_of, label = name.split(" ", 1)
        prompts = (creative_prompts if kind_of == "creative" else coding_prompts)(
            len(cell["marked"])
        )
        marked = [np.asarray(x, np.int64) for x in cell["marked"]]
        plain = [np.asarray(x, np.int64) for x in cell["plain"]]
        sources = read_sources(model, prompts, marked, *SAMPLINGS[label])
        rng = np.random.default_rng(13)
        half = len(marked) // 2
        results: dict[str, list[list[float]]] = {"dev": [], "held-out": [], "plain": []}
        t0 = time.perf_counter()
        sampling = SAMPLINGS[label]
        for _ in range(draws):
            edited = [edit_tracked(x, "substitute", rate, pool, rng) for x in marked]
            reads = read_observed(model, [d for d, _ in edited], *sampling)
            for i, ((ids, origin), read) in enumerate(zip(edited, reads, strict=True)):
                o = oracle_log10_ps(ids, origin, sources[i])
                row = deployable(ids, read, KEY) + [o[0], o[3]] + masked(ids, read, KEY)
                results["dev" if i < half else "held-out"].append(row)
            negs = [edit(x, "substitute", rate, pool, rng) for x in plain]
            for ids, read in zip(negs, read_observed(model, negs, *sampling), strict=True):
                results["plain"].append(
                    deployable(ids, read, KEY) + no_oracle + masked(ids, read, KEY)
                )
            print(f"draw done: {time.perf_counter() - t0:.0f}s", flush=True)
        step = max(200, (human.shape[0] - 200) // max(human_docs, 1))
        pieces = [human[i : i + 200] for i in range(0, human.shape[0] - 200, step)][:human_docs]
        human_rows = []
        for ids, read in zip(pieces, read_observed(model, pieces, *sampling), strict=True):
            for k in range(human_keys):
                key = KEY + 1 + k
                human_rows.append(deployable(ids, read, key) + no_oracle + masked(ids, read, key))
        results["human"] = human_rows
        rates_of = {split: _reject_rates(v, level, len(names)) for split, v in results.items()}
        print(
            f"\n{name}, {int(rate * 100)}% substitutions, {draws} draws: development "
            f"{len(results['dev'])}, held-out {len(results['held-out'])}, unwatermarked "
            f"{len(results['plain'])}, human {len(human_rows)} tests\n"
            "| statistic | development % | held-out % | FPR unwatermarked % | FPR human % |\n"
            "| --- | --- | --- | --- | --- |"
        )
        for j, stat in enumerate(names):
            print(
                f"| {stat} | "
                + " | ".join(
                    _pct(float(rates_of[k][j])) for k in ("dev", "held-out", "plain", "human")
                )
                + " |",
                flush=True,
            )
        rows.append(
            {"cell": name, "rate": rate, "names": names}
            | {k: np.asarray(v).tolist() for k, v in results.items()}
        )
    return rows


def planted_table(cells: dict[str, Any], human: np.ndarray) -> list[dict[str, Any]]:
    """The first PLANT tokens of each text inside HUMAN_AROUND tokens of prose."""
    from detector.evidence.detection import detect_ids

    rows = []
    rng = np.random.default_rng(11)
    for name, cell in cells.items():
        alone, doc_hits, human_hits, alone_assisted = [], [], [], []
        for x in cell["marked"]:
            span = np.asarray(x[:PLANT], np.int64)
            start = int(rng.integers(0, human.shape[0] - HUMAN_AROUND))
            body = human[start : start + HUMAN_AROUND]
            cut = int(rng.integers(100, HUMAN_AROUND - 100))
            doc = np.concatenate([body[:cut], span, body[cut:]])
            alone.append(detect_ids(span, KEY).p_value <= THRESHOLD)
            if _assist:
                alone_assisted.append(decisions(span, KEY, expected_of([span])[0]))
                doc_hits.append(decisions(doc, KEY, expected_of([doc])[0]))
                human_hits.append(decisions(body, KEY, expected_of([body])[0]))
            else:
                doc_hits.append(decisions(doc))
                human_hits.append(decisions(body))
        hit = np.asarray(doc_hits, bool).mean(0)
        fpr = np.asarray(human_hits, bool).mean(0)
        alone_rate = float(np.mean(alone))
        row: dict[str, Any] = {"cell": name, "n": len(alone), "alone": alone_rate}
        row |= {c: float(v) for c, v in zip(COLUMNS, hit, strict=True)}
        row |= {f"fpr_{c}": float(v) for c, v in zip(COLUMNS, fpr, strict=True)}
        rows.append(row)
        ratios = [v / alone_rate if alone_rate else float("nan") for v in hit]
        print(
            f"| {name} | {row['n']} | {100 * row['alone']:.1f} | "
            + " | ".join(f"{100 * v:.1f} ({r:.2f}x)" for v, r in zip(hit, ratios, strict=True))
            + " | "
            + " | ".join(f"{100 * v:.1f}" for v in fpr)
            + " |",
            flush=True,
        )
        if alone_assisted:  # the model-assisted columns against the same test of the span alone
            by_alone = np.asarray(alone_assisted, bool).mean(0)
            row["alone_columns"] = {c: float(v) for c, v in zip(COLUMNS, by_alone, strict=True)}
            print(
                f"  ({name}, the span alone under each column's own test: "
                + ", ".join(
                    f"{c} {100 * a:.1f} -> {100 * v:.1f} in document"
                    + (f" ({v / a:.2f}x)" if a else "")
                    for c, a, v in zip(COLUMNS, by_alone, hit, strict=True)
                )
                + ")",
                flush=True,
            )
    return rows


def human_fpr(
    human: np.ndarray, docs: int, keys: int, length: int = HUMAN_AROUND
) -> tuple[int, tuple[float, ...]]:
    """False-positive rates of every column on human-only prose of ``length`` tokens: ``docs``
    disjoint pieces, each tested under ``keys`` keys."""
    step = max(length, (human.shape[0] - length) // docs)
    pieces = [human[i : i + length] for i in range(0, human.shape[0] - length, step)]
    per_key = [rates(pieces[:docs], KEY + k) for k in range(keys)]
    return len(pieces[:docs]) * keys, tuple(float(v) for v in np.mean(per_key, axis=0))


def main() -> None:
    global COLUMNS, ORACLE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=12, help="prompts per cell")
    parser.add_argument(
        "--generate-only",
        type=int,
        metavar="CELLS",
        help="generate at most CELLS missing cells (under the vLLM lock) and stop",
    )
    parser.add_argument(
        "--edit-draws", type=int, default=1, help="independent edits of every text per rate"
    )
    parser.add_argument(
        "--human-keys", type=int, default=5, help="keys for the human-only FPR (each piece)"
    )
    parser.add_argument(
        "--human-docs", type=int, default=200, help="disjoint human-only pieces for the FPR"
    )
    parser.add_argument(
        "--human-tokens", type=int, default=HUMAN_AROUND, help="tokens per human-only piece"
    )
    parser.add_argument(
        "--plain-draws",
        type=int,
        help="independent edits of every unwatermarked text per rate (default: --edit-draws)",
    )
    parser.add_argument(
        "--no-planted", action="store_true", help="skip the mixed documents (edits only)"
    )
    parser.add_argument(
        "--no-edits", action="store_true", help="skip the edit tables (mixed documents only)"
    )
    parser.add_argument(
        "--rates", type=float, action="append", help="only this edit rate (repeatable)"
    )
    parser.add_argument("--no-clean", action="store_true", help="skip the unedited texts")
    parser.add_argument(
        "--no-paraphrase",
        action="store_true",
        help="with --generate-only: generate no paraphrases (the edits only)",
    )
    parser.add_argument(
        "--cells",
        action="append",
        choices=CELLS,
        help="only this cell (repeatable; default: all four)",
    )
    parser.add_argument(
        "--kinds",
        action="append",
        choices=KINDS,
        help="only this edit kind (repeatable; default: all three)",
    )
    parser.add_argument(
        "--assist",
        action="store_true",
        help="add the model-assisted columns (SmolLM2 reads every text once)",
    )
    parser.add_argument(
        "--masked",
        type=float,
        metavar="RATE",
        help="only the comparison at RATE substitutions of the deployable tests, the oracle "
        "and the suspected-edit tests (development and held-out halves of the prompts; "
        "SmolLM2 reads every edited text once)",
    )
    parser.add_argument(
        "--oracle",
        action="store_true",
        help="add the oracle columns of the edit tables (they know which tokens are intact; "
        "SmolLM2 reads every unedited text twice)",
    )
    args = parser.parse_args()
    if args.generate_only is not None:
        generate(args.prompts, args.generate_only, args.cells, not args.no_paraphrase)
        return
    from benchmarks.corpus import english_prose
    from detector.text.tokenizers import load_tokenizer

    data = generate(args.prompts, only=args.cells)
    tok = load_tokenizer("default")
    if args.assist:
        from detector.reading.model import ModelAssist
        from generator.models import embedded_model_dir

        COLUMNS = BASE_COLUMNS + ASSISTED_COLUMNS
        _assist.update(model=ModelAssist(embedded_model_dir()), cache={})
    if args.oracle:
        from detector.reading.model import ModelAssist
        from generator.models import embedded_model_dir

        ORACLE = ORACLE_COLUMNS
        _oracle["model"] = _assist.get("model") or ModelAssist(embedded_model_dir())
    human = tok.encode(english_prose())
    if args.masked is not None:
        from detector.reading.model import ModelAssist
        from generator.models import embedded_model_dir

        _oracle["model"] = ModelAssist(embedded_model_dir())
        rows = masked_table(
            data["cells"],
            human,
            human,
            args.edit_draws,
            args.masked,
            args.human_docs,
            args.human_keys,
        )
        cache_path().with_name(f"masked-{int(args.masked * 100)}.json").write_text(json.dumps(rows))
        return
    print(f"\n{args.prompts} prompts per cell, {TOKENS} tokens, key fixed, threshold {THRESHOLD}")
    head = " | ".join(f"{c} %" for c in COLUMNS)
    fpr_head = " | ".join(f"FPR {c} %" for c in COLUMNS)
    rule = "| --- " * (3 + 2 * len(COLUMNS)) + "|"
    # Human prose first: the false-positive rates are the figures the others are read against.
    n, fpr = 0, (float("nan"),) * len(COLUMNS)
    if args.human_docs:
        n, fpr = human_fpr(human, args.human_docs, args.human_keys, args.human_tokens)
        print(f"\nhuman prose, {n} tests ({args.human_keys} keys) of {args.human_tokens} tokens:")
        print(", ".join(f"FPR {c} {100 * v:.1f}%" for c, v in zip(COLUMNS, fpr, strict=True)))
    edit_head = " | ".join(f"{c} %" for c in COLUMNS + ORACLE)
    edit_fpr_head = " | ".join(f"FPR {c} %" for c in COLUMNS + ORACLE)
    edit_rule = "| --- " * (3 + 2 * len(COLUMNS + ORACLE)) + "|"
    print(f"\n| cell | edit | n | {edit_head} | {edit_fpr_head} |\n{edit_rule}")
    kinds = tuple(args.kinds or KINDS)
    edits = (
        []
        if args.no_edits
        else edit_table(
            data["cells"],
            human,
            tok,
            args.edit_draws,
            kinds,
            args.plain_draws,
            tuple(args.rates or RATES),
            not args.no_clean,
        )
    )
    planted: list[dict[str, Any]] = []
    if not args.no_planted:
        print(f"\n| cell | n | {PLANT} alone % | {head} (in document) | {fpr_head} |\n| --- {rule}")
        planted = planted_table(data["cells"], human)
    out = cache_path().with_name("results.json")
    out.write_text(json.dumps({"edits": edits, "planted": planted, "human": [n, *fpr]}))


if __name__ == "__main__":
    main()
