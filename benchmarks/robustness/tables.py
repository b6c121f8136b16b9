"""The edit table and the planted-passage table of the benchmark."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from benchmarks.bench_generate import coding_prompts, creative_prompts
from benchmarks.robustness.columns import decision_matrix, decisions, expected_of, rates
from benchmarks.robustness.common import (
    HUMAN_AROUND,
    KEY,
    KINDS,
    PLANT,
    RATES,
    RUN,
    SAMPLINGS,
    THRESHOLD,
    _pct,
)
from benchmarks.robustness.edits import edit_tracked
from benchmarks.robustness.oracle import (
    Q_FLOOR,
    SourceReads,
    oracle_rates,
    read_sources,
)


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
    ``RUN.oracle`` set (``RUN.oracle_model`` a ``ModelAssist``), also the oracle columns."""
    rows = []
    for name, cell in cells.items():
        rng = np.random.default_rng(7)
        marked = [np.asarray(x, np.int64) for x in cell["marked"]]
        plain = [np.asarray(x, np.int64) for x in cell["plain"]]
        sources: dict[str, list[SourceReads]] = {}
        if RUN.oracle:
            kind_of, label = name.split(" ", 1)
            prompts = (creative_prompts if kind_of == "creative" else coding_prompts)(len(marked))
            t0 = time.perf_counter()
            sources = {
                "marked": read_sources(RUN.oracle_model, prompts, marked, *SAMPLINGS[label]),
                "plain": read_sources(RUN.oracle_model, prompts, plain, *SAMPLINGS[label]),
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
        nan_cols = (float("nan"),) * len(RUN.columns)
        nan_oracle = (float("nan"),) * len(RUN.oracle)
        for variant, entry in variants.items():
            pos, pos_origin, pos_src = entry["marked"]
            neg, neg_origin, neg_src = entry["plain"]
            got = decision_matrix(pos)
            hit = tuple(float(v) for v in got.mean(0))
            fpr = rates(neg) if neg else nan_cols
            o_hit = o_fpr = nan_oracle
            if RUN.oracle and pos_origin:
                reads = sources["marked"]
                o_hit = oracle_rates(pos, pos_origin, [reads[i] for i in pos_src])
            if RUN.oracle and neg_origin:
                reads = sources["plain"]
                o_fpr = oracle_rates(neg, neg_origin, [reads[i] for i in neg_src])
            rows.append(
                {"cell": name, "edit": variant, "n": len(pos), "n_fpr": len(neg)}
                | dict(zip(RUN.columns + RUN.oracle, hit + o_hit, strict=True))
                | {
                    f"fpr_{c}": v
                    for c, v in zip(RUN.columns + RUN.oracle, fpr + o_fpr, strict=True)
                }
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
                held_out = dict(zip(RUN.columns, got[later].mean(0).tolist(), strict=True))
                rows[-1]["held_out"] = held_out
                print(
                    f"  (second half of the prompts, {int(later.sum())} texts: "
                    + ", ".join(f"{c} {_pct(v)}" for c, v in held_out.items())
                    + ")",
                    flush=True,
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
            if RUN.assist is not None:
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
        row |= {c: float(v) for c, v in zip(RUN.columns, hit, strict=True)}
        row |= {f"fpr_{c}": float(v) for c, v in zip(RUN.columns, fpr, strict=True)}
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
            row["alone_columns"] = {c: float(v) for c, v in zip(RUN.columns, by_alone, strict=True)}
            print(
                f"  ({name}, the span alone under each column's own test: "
                + ", ".join(
                    f"{c} {100 * a:.1f} -> {100 * v:.1f} in document"
                    + (f" ({v / a:.2f}x)" if a else "")
                    for c, a, v in zip(RUN.columns, by_alone, hit, strict=True)
                )
                + ")",
                flush=True,
            )
    return rows
