"""Edits and mixed documents on the real generator: SmolLM2-135M on vLLM with our processor.

Generates once (under the vLLM lock) and caches every text in
``$PROVENANCE_DATA_DIR/robustness/generations.json``; later runs only detect. For creative and
code prompts at T=1 and at T=0.7/top-p 0.9 (``--prompts`` per cell, 200 tokens each):

1. Edits: 10/20/30% random token substitutions, insertions and deletions (replacement tokens
   drawn from real prose), and a paraphrase of each text by the same model without
   watermark. Detection rate at p <= 0.01 of the global test and of the localized decision
   (``detector.localize``: global test and span scan, Bonferroni).
2. Mixed documents: the first 120 tokens of each text inside ~1,200 human tokens of prose.
   Rates of the 120 tokens tested alone, of the global test on the document and of the
   localized decision on it (target: localized >= 0.8x alone).
3. False positives in the same run: unwatermarked generations of the same prompts (all edit
   kinds too) and human-only documents of prose, under the same key.

Run: ``flock /tmp/provenance-vllm.lock python benchmarks/bench_robustness.py [--prompts 12]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
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
from detector.config import as_key_config  # noqa: E402

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
    prompts: int, max_cells: int | None = None, only: list[str] | None = None
) -> dict[str, Any]:
    """Every cell's watermarked and plain generations and the paraphrases (cached per cell).

    ``max_cells`` generates at most that many missing cells and returns, so that a long run can
    hold the vLLM lock in chunks; the cache keeps what is done. ``only`` restricts the run (and
    the cells returned) to the cells so named.
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
                para = backend.generate(_paraphrase_requests([g.text for g in marked]))
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


def edit(ids: np.ndarray, kind: str, rate: float, pool: np.ndarray, rng: Any) -> np.ndarray:
    """``rate`` of the positions substituted, preceded by an insertion, or deleted."""
    hit = rng.random(ids.shape[0]) < rate
    fresh = pool[rng.integers(0, pool.shape[0], ids.shape[0])]
    if kind == "substitute":
        return np.where(hit, fresh, ids)
    if kind == "delete":
        return ids[~hit]
    out = []
    for token, h, new in zip(ids, hit, fresh, strict=True):
        if h:
            out.append(new)
        out.append(token)
    return np.asarray(out, np.int64)


BASE_COLUMNS = ("global", "localized", "robust", "combined")
# With --assist: SmolLM2's E[s] per token (detector.assist, as the product reads it: T=1, BOS).
ASSISTED_COLUMNS = ("weighted", "assisted", "w-robust", "assisted+w-robust")
COLUMNS: tuple[str, ...] = BASE_COLUMNS
_assist: dict[str, Any] = {}  # "model": the ModelAssist, "cache": E[s] per text


def expected_of(docs: list[np.ndarray]) -> list[np.ndarray]:
    """The model's ``E[s]`` of every token of every text (cached: the keys share them)."""
    cache = _assist["cache"]
    missing = [d for d in docs if d.tobytes() not in cache]
    for d, e in zip(missing, _assist["model"].expected_scores(missing), strict=True):
        cache[d.tobytes()] = e
    return [cache[d.tobytes()] for d in docs]


def decisions(ids: np.ndarray, key: int = KEY, expected: np.ndarray | None = None) -> tuple:
    """At THRESHOLD under the benchmark key: the global test, the localized decision, the
    edit-robust statistic alone (``detector.robust``) and the three combined (Bonferroni).
    With the model's ``expected`` scores, also: the weighted test alone, the product's
    assisted decision (Gamma and weighted, Bonferroni x2), the weighted edit-robust test
    (``detector.robust_weighted``) alone, and Gamma, weighted and weighted edit-robust
    combined (Bonferroni x3)."""
    from detector.detect import detect_config
    from detector.localize import exp_scores, localize_ids
    from detector.robust import robust_scores_log10_p
    from detector.robust_weighted import weighted_robust_test

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
    det = detect_config(ids, config, THRESHOLD, expected_scores=expected)
    assert det.weighted is not None
    wr = weighted_robust_test(scores, det.weighted.expected_scores)
    three = min(det.log10_p, det.weighted.log10_p, wr.log10_p) + np.log10(3.0)
    return out + (
        det.weighted.log10_p <= level,
        det.decision_log10_p <= level,
        wr.log10_p <= level,
        three <= level,
    )


def rates(docs: list[np.ndarray], key: int = KEY) -> tuple[float, ...]:
    expected = expected_of(docs) if _assist else [None] * len(docs)
    got = [decisions(d, key, e) for d, e in zip(docs, expected, strict=True)]
    return tuple(float(v) for v in np.array(got, bool).reshape(-1, len(COLUMNS)).mean(0))


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
    """Every cell's rates after each edit; ``draws`` independent edits of every text."""
    rows = []
    for name, cell in cells.items():
        rng = np.random.default_rng(7)
        marked = [np.asarray(x, np.int64) for x in cell["marked"]]
        plain = [np.asarray(x, np.int64) for x in cell["plain"]]
        variants: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {}
        if clean:
            variants["clean"] = (marked, plain)
        for kind in kinds:
            for rate in edit_rates:
                variants[f"{kind} {int(rate * 100)}%"] = (
                    [edit(x, kind, rate, pool, rng) for _ in range(draws) for x in marked],
                    [
                        edit(x, kind, rate, pool, rng)
                        for _ in range(draws if plain_draws is None else plain_draws)
                        for x in plain
                    ],
                )
        variants["paraphrase"] = (
            [np.asarray(tok.encode(t), np.int64) for t in cell["paraphrase"]],
            [],
        )
        for variant, (pos, neg) in variants.items():
            hit = rates(pos)
            fpr = rates(neg) if neg else (float("nan"),) * len(COLUMNS)
            rows.append(
                {"cell": name, "edit": variant, "n": len(pos)}
                | dict(zip(COLUMNS, hit, strict=True))
                | {f"fpr_{c}": v for c, v in zip(COLUMNS, fpr, strict=True)}
            )
            print(
                f"| {name} | {variant} | {len(pos)} | "
                + " | ".join(f"{100 * v:.1f}" for v in hit)
                + " | "
                + " | ".join(f"{100 * v:.1f}" for v in fpr)
                + " |",
                flush=True,
            )
    return rows


def planted_table(cells: dict[str, Any], human: np.ndarray) -> list[dict[str, Any]]:
    """The first PLANT tokens of each text inside HUMAN_AROUND tokens of prose."""
    from detector.detect import detect_ids

    rows = []
    rng = np.random.default_rng(11)
    for name, cell in cells.items():
        alone, doc_hits, human_hits = [], [], []
        for x in cell["marked"]:
            span = np.asarray(x[:PLANT], np.int64)
            start = int(rng.integers(0, human.shape[0] - HUMAN_AROUND))
            body = human[start : start + HUMAN_AROUND]
            cut = int(rng.integers(100, HUMAN_AROUND - 100))
            doc = np.concatenate([body[:cut], span, body[cut:]])
            alone.append(detect_ids(span, KEY).p_value <= THRESHOLD)
            if _assist:
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
    global COLUMNS
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
        "--rates", type=float, action="append", help="only this edit rate (repeatable)"
    )
    parser.add_argument("--no-clean", action="store_true", help="skip the unedited texts")
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
    args = parser.parse_args()
    if args.generate_only is not None:
        generate(args.prompts, args.generate_only, args.cells)
        return
    from benchmarks.corpus import english_prose
    from detector.tokenizers import load_tokenizer

    data = generate(args.prompts, only=args.cells)
    tok = load_tokenizer("default")
    if args.assist:
        from detector.assist import ModelAssist
        from generator.models import embedded_model_dir

        COLUMNS = BASE_COLUMNS + ASSISTED_COLUMNS
        _assist.update(model=ModelAssist(embedded_model_dir()), cache={})
    human = tok.encode(english_prose())
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
    print(f"\n| cell | edit | n | {head} | {fpr_head} |\n{rule}")
    kinds = tuple(args.kinds or KINDS)
    edits = edit_table(
        data["cells"],
        human,
        tok,
        args.edit_draws,
        kinds,
        args.plain_draws,
        tuple(args.rates or RATES),
        not args.no_clean,
    )
    planted: list[dict[str, Any]] = []
    if not args.no_planted:
        print(f"\n| cell | n | {PLANT} alone % | {head} (in document) | {fpr_head} |\n| --- {rule}")
        planted = planted_table(data["cells"], human)
    out = cache_path().with_name("results.json")
    out.write_text(json.dumps({"edits": edits, "planted": planted, "human": [n, *fpr]}))


if __name__ == "__main__":
    main()
