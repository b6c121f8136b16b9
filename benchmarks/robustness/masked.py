"""Suspected edits: the tests on the tokens that no token the model reads as unlikely touches,
against the deployable tests and the oracle, on a development and a held-out half."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from benchmarks.bench_generate import coding_prompts, creative_prompts
from benchmarks.robustness.common import KEY, RUN, SAMPLINGS, THRESHOLD, _pct, weighted_log_sf
from benchmarks.robustness.edits import edit, edit_tracked
from benchmarks.robustness.oracle import oracle_log10_ps, read_sources
from detector.core.config import as_key_config

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

    model = RUN.oracle_model
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
