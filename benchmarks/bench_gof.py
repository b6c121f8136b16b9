"""The model-agnostic statistics of ``benchmarks.research.gof`` against the Gamma sum, on the power
benchmark's cells, with the false-positive rates and per-key dispersion of the same run.

Texts: the cached generations of ``bench_power`` (SmolLM2-135M-Instruct on vLLM with the
project's processor, benchmark key): code at T=0.7/top-p 0.9 (50 prompts) and creative at
T=0.7/top-p 0.9 (40 prompts); generate them first with ``bench_power.py --generate-only
--cells "code T=0.7 top-p 0.9,creative T=0.7 top-p 0.9"``.

Cells (all scored as the product scores: de-duplicated, the tokenizer's n-gram table's common
pairs left unscored):

- ``code``: code answers after 50 / 100 / 200 tokens;
- ``creative sub 20%``: the first 200 tokens of each creative answer with 20% of the tokens
  substituted by tokens drawn from prose (``--edit-draws`` edits of each);
- ``planted``: the first 120 tokens of each code answer inside 1,200 tokens of prose, with the
  120 tokens tested alone beside it.

Texts with an even index form the development half on which a rule is chosen (before the
held-out half is read); odd ones the held-out half. Rules: each statistic alone, and each one
in the place of the Gamma sum in the decision (``2 min(p, p_scan)``) or beside it.

False positives in the same run: ``--chunks`` held-out 200-token chunks of each genre of
``benchmarks.dispersion`` (prose, code, dpkg, apt) and of the Japanese, Korean and Chinese
message catalogs, under ``--keys`` random keys (mean rate over keys x chunks, worst key), and
human-only documents of 1,200 prose tokens for the planted cell.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_gof.py [--chunks 200] [--keys 20]``
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from benchmarks.bench_generate import KEY  # noqa: E402
from benchmarks.generations import cache_dir  # noqa: E402
from benchmarks.research import gof  # noqa: E402
from detector.core.config import as_key_config  # noqa: E402
from detector.evidence import scan  # noqa: E402
from detector.evidence.detection import detect_config  # noqa: E402
from detector.evidence.localize import exp_scores  # noqa: E402

THRESHOLD = 0.01
LOG10_T = math.log10(THRESHOLD)
LOG10_2, LOG10_3 = math.log10(2.0), math.log10(3.0)
PREFIXES = (50, 100, 200)
CUTS = (0.5, 1.0, 1.5, 2.0, 3.0)
TABULATED = tuple(gof.ROWS)
PLANT, AROUND = 120, 1200
CELLS = ("code T=0.7 top-p 0.9", "creative T=0.7 top-p 0.9")


def statistics(exp: np.ndarray) -> dict[str, float]:
    """log10 p of every test on one text's scored tokens (Exp(1) under the null)."""
    n = exp.shape[0]
    out: dict[str, float] = {}
    from detector.core.stats import gamma_sf

    out["gamma"] = gamma_sf(float(exp.sum()), n)[1] if n else 0.0
    w = scan.best_window(exp, np.zeros(n, np.bool_)) if n else None
    out["scan"] = 0.0 if w is None else scan.scan_log10_p(w.log10_p, n)
    for c in CUTS:
        out[f"trunc c={c:g}"] = gof.log10_p("truncated_sum", exp, cut=c)
    for name in TABULATED:
        out[name] = gof.log10_p(name, exp)
    return out


def _cauchy(log10_ps: list[float]) -> float:
    """log10 of the Cauchy combination of p-values (Liu and Xie), equal weights."""
    ps = [max(10.0**lp, 1e-300) for lp in log10_ps]
    t = float(np.mean([math.tan((0.5 - p) * math.pi) if p < 1.0 else -1e300 for p in ps]))
    p = 0.5 - math.atan(t) / math.pi if t < 1e15 else 1.0 / (math.pi * t)
    return math.log10(max(min(p, 1.0), 1e-300))


Rule = Callable[[dict[str, float]], float]


def _alone(x: str) -> Rule:
    return lambda s: s[x]


def _with_scan(x: str) -> Rule:
    return lambda s: LOG10_2 + min(s[x], s["scan"])


def _beside(x: str) -> Rule:
    return lambda s: LOG10_3 + min(s["gamma"], s[x], s["scan"])


def _cauchy_beside(x: str) -> Rule:
    return lambda s: LOG10_2 + min(_cauchy([s["gamma"], s[x]]), s["scan"])


GAMMA_SHARES = (0.75, 0.9)


def _shared(w: float) -> Rule:
    a, b = -math.log10(w), -math.log10(1.0 - w)
    return lambda s: min(s["gamma"] + a, s["scan"] + b)


def rules() -> dict[str, Rule]:
    """Decision rules: the log10 p each one decides on."""
    out: dict[str, Rule] = {
        "gamma": _alone("gamma"),
        "current decision (gamma, scan)": _with_scan("gamma"),
    }
    for w in GAMMA_SHARES:  # weighted Bonferroni: the Gamma test at w alpha, the scan at the rest
        out[f"gamma at {w:g} alpha, scan at {1 - w:g} alpha"] = _shared(w)
    for x in [f"trunc c={c:g}" for c in CUTS] + list(TABULATED):
        out[x] = _alone(x)
        out[f"({x}, scan)"] = _with_scan(x)
        out[f"(gamma, {x}, scan)"] = _beside(x)
        out[f"(cauchy(gamma, {x}), scan)"] = _cauchy_beside(x)
    return out


RULES = rules()


def flags(stats: dict[str, float]) -> dict[str, bool]:
    return {r: f(stats) <= LOG10_T for r, f in RULES.items()}


def exp_of(ids: np.ndarray, key: int, table) -> np.ndarray:
    config = as_key_config(key)
    return exp_scores(detect_config(ids, config, THRESHOLD, ngrams=table), config)


def prefix_flags(ids: np.ndarray, key: int, table, lengths=PREFIXES) -> dict[int, dict]:
    """Flags of every rule after each prefix (the prefix's scored tokens are a prefix of the
    text's: the first occurrence of a context in a prefix is its first in the text)."""
    config = as_key_config(key)
    det = detect_config(ids, config, THRESHOLD, ngrams=table)
    exp = exp_scores(det, config)
    where = np.flatnonzero(det.scored_mask)
    return {n: flags(statistics(exp[: int(np.searchsorted(where, n))])) for n in lengths}


def load_cells() -> dict[str, list[np.ndarray]]:
    out = {}
    for name in CELLS:
        slug = name.replace(" ", "_").replace("=", "").replace("/", "")
        data = json.loads((cache_dir("power") / f"{slug}.json").read_text())
        out[name] = [np.asarray(x, np.int64) for x in data["token_ids"]]
    return out


def rate(hits: list[dict[str, bool]], rule: str) -> float:
    return float(np.mean([h[rule] for h in hits])) if hits else math.nan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=200, help="human chunks per corpus")
    parser.add_argument("--keys", type=int, default=20, help="random keys for the FPR")
    parser.add_argument("--edit-draws", type=int, default=4)
    parser.add_argument("--planted-docs", type=int, default=200, help="human-only 1,200-token docs")
    args = parser.parse_args()
    from benchmarks.bench_public import catalog_chunks
    from benchmarks.corpus import english_prose
    from benchmarks.dispersion import chunks, genre_documents, split
    from benchmarks.robustness.edits import edit
    from detector.text.tokenizers import load_tokenizer

    t0 = time.time()
    tok = load_tokenizer()
    table = tok.ngram_table
    texts = load_cells()
    prose = np.asarray(tok.encode(english_prose()), np.int64)
    print(f"{time.strftime('%Y-%m-%d %H:%M')} alpha {THRESHOLD}, key fixed for power", flush=True)

    halves: dict[str, dict[str, list]] = {"dev": {}, "held-out": {}}

    def add(cell: str, index: int, got: dict[str, bool]) -> None:
        halves["dev" if index % 2 == 0 else "held-out"].setdefault(cell, []).append(got)

    for i, ids in enumerate(texts[CELLS[0]]):
        for n, got in prefix_flags(ids, KEY, table).items():
            add(f"code {n}", i, got)
    rng = np.random.default_rng(20)
    for i, ids in enumerate(texts[CELLS[1]]):
        for _ in range(args.edit_draws):
            edited = edit(ids[:200], "substitute", 0.2, prose, rng)
            add("creative sub 20%", i, prefix_flags(edited, KEY, table, (200,))[200])
    rng = np.random.default_rng(11)
    for i, ids in enumerate(texts[CELLS[0]]):
        span = ids[:PLANT]
        start = int(rng.integers(0, prose.shape[0] - AROUND))
        body = prose[start : start + AROUND]
        cut = int(rng.integers(100, AROUND - 100))
        doc = np.concatenate([body[:cut], span, body[cut:]])
        add("planted in doc", i, prefix_flags(doc, KEY, table, (doc.size,))[doc.size])
        add("planted alone", i, prefix_flags(span, KEY, table, (PLANT,))[PLANT])
    print(f"power measured in {time.time() - t0:.0f} s", flush=True)

    # False positives: random keys on held-out human chunks of every corpus.
    corpora: dict[str, list[np.ndarray]] = {}
    for genre, docs in genre_documents().items():
        _, test = split([np.asarray(tok.encode(d), np.int64) for d in docs])
        corpora[genre] = chunks(test, 200, args.chunks)
    for language in ("ja", "ko", "zh_Hans"):
        found = catalog_chunks(tok, language, args.chunks, 200)
        corpora[f"cjk {language}"] = [np.asarray(tok.encode(t), np.int64) for t in found]
    keys = [int(k) for k in np.random.default_rng(7).integers(1, 2**63, args.keys)]
    fpr: dict[str, dict] = {}
    for corpus, pieces in corpora.items():
        counts = {n: {r: np.zeros(len(keys)) for r in RULES} for n in PREFIXES}
        for k, key in enumerate(keys):
            for ids in pieces:
                for n, got in prefix_flags(ids, key, table).items():
                    for r, hit in got.items():
                        counts[n][r][k] += hit
        fpr[corpus] = {"n": len(pieces), "counts": counts}
        print(f"FPR {corpus}: {len(pieces)} chunks x {len(keys)} keys, {time.time() - t0:.0f} s")
    rng = np.random.default_rng(12)
    doc_counts = {r: 0 for r in RULES}
    for d in range(args.planted_docs):
        start = int(rng.integers(0, prose.shape[0] - AROUND))
        body = prose[start : start + AROUND]
        got = prefix_flags(body, keys[d % len(keys)], table, (AROUND,))[AROUND]
        for r, hit in got.items():
            doc_counts[r] += hit
    report(halves, fpr, doc_counts, args, len(keys))
    print(f"\ntotal {time.time() - t0:.0f} s")


def report(halves, fpr, doc_counts, args, nkeys) -> None:
    cols = ["code 50", "code 100", "code 200", "creative sub 20%", "planted in doc"]
    scored = ["code 100", "code 200", "creative sub 20%", "planted in doc"]

    def fpr_of(rule: str) -> tuple[float, float]:
        """The largest mean FPR over keys (any corpus, any prefix) and the worst key's rate
        at 200 tokens on the corpora of at least 100 chunks (one flag in 41 is 2.4%)."""
        worst_mean, worst_key = 0.0, 0.0
        for entry in fpr.values():
            for n in PREFIXES:
                c = entry["counts"][n][rule]
                worst_mean = max(worst_mean, c.mean() / entry["n"])
            if entry["n"] >= 100:
                worst_key = max(worst_key, entry["counts"][200][rule].max() / entry["n"])
        return worst_mean, worst_key

    dev = halves["dev"]
    eligible = []
    for r in RULES:
        mean, key = fpr_of(r)
        if mean <= 0.012:
            score = float(np.mean([rate(dev[c], r) for c in scored]))
            eligible.append((score, r, mean, key))
    eligible.sort(reverse=True)
    print("\nchoice on the development half (mean of code 100, code 200, creative sub 20%,")
    print("planted in doc) among the rules whose mean FPR is <= 1.2% on every corpus and prefix;")
    print("largest mean FPR, worst key at 200 tokens on corpora of >= 100 chunks:")
    for score, r, mean, key in eligible[:8]:
        print(f"  {100 * score:5.1f}  {r}  (FPR {100 * mean:.2f}%, worst key {100 * key:.1f}%)")
    shown = [
        "gamma",
        "current decision (gamma, scan)",
        *[r for r in RULES if r not in ("gamma", "current decision (gamma, scan)")],
    ]
    halves["all"] = {
        c: halves["dev"].get(c, []) + halves["held-out"].get(c, [])
        for c in [*cols, "planted alone"]
    }
    for half in ("dev", "held-out", "all"):
        h = halves[half]
        n = {c: len(h.get(c, [])) for c in cols + ["planted alone"]}
        print(f"\n{half} half (texts: " + ", ".join(f"{c} {n[c]}" for c in cols) + ")")
        print("| rule | " + " | ".join(f"{c} %" for c in cols) + " | alone % | in doc / alone |")
        print("| --- " * (len(cols) + 3) + "|")
        for r in shown:
            vals = [rate(h.get(c, []), r) for c in cols]
            alone = rate(h.get("planted alone", []), r)
            ratio = vals[-1] / alone if alone else math.nan
            print(
                f"| {r} | "
                + " | ".join(f"{100 * v:.1f}" for v in vals)
                + f" | {100 * alone:.1f} | {ratio:.2f} |"
            )
    print(f"\nfalse positives, {nkeys} random keys, % at 50 / 100 / 200 tokens: mean (worst key)")
    corpora = list(fpr)
    print("| rule | " + " | ".join(corpora) + " | 1,200-token prose docs |")
    print("| --- " * (len(corpora) + 2) + "|")
    for r in shown:
        cells = []
        for corpus in corpora:
            e = fpr[corpus]
            parts = [
                f"{100 * e['counts'][n][r].mean() / e['n']:.2f}"
                f" ({100 * e['counts'][n][r].max() / e['n']:.1f})"
                for n in PREFIXES
            ]
            cells.append(" / ".join(parts))
        docs = f"{100 * doc_counts[r] / max(args.planted_docs, 1):.1f}"
        print(f"| {r} | " + " | ".join(cells) + f" | {docs} |")
    print("\nper-key dispersion at 200 tokens (variance / mean of the flag counts over keys):")
    main_rules = [
        r for r in RULES if not r.startswith(("(", "gamma at")) or r.startswith("(trunc c=1,")
    ]
    for r in [*main_rules, *(x for _, x, _, _ in eligible[:3] if x not in main_rules)]:
        disp = []
        for corpus in corpora:
            c = fpr[corpus]["counts"][200][r]
            disp.append(f"{corpus} {c.var(ddof=1) / max(c.mean(), 1e-12):.2f}")
        print(f"  {r}: " + ", ".join(disp))
    targets(halves)
    out = cache_dir("gof") / "results.json"
    rates = {
        half: {c: {r: rate(v, r) for r in RULES} for c, v in h.items()}
        for half, h in halves.items()
    }
    out.write_text(json.dumps({"rates": rates, "eligible": eligible}, indent=1))


TARGETS = {"code 100": 0.65, "code 200": 0.85, "creative sub 20%": 0.70}


def targets(halves: dict[str, dict[str, list]]) -> None:
    """Each target against the current decision and the best rule measured (its bound here:
    the most any model-free rule of this run reaches), held out and over all texts; the
    planted target as the document's rate over the span's alone (Gamma test alone, as the
    robustness benchmark states it, and the rule's own test of the span)."""
    print("\ntargets (current decision; best rule of this run, its bound):")
    for half in ("held-out", "all"):
        h = halves[half]
        for cell, goal in TARGETS.items():
            now = rate(h[cell], "current decision (gamma, scan)")
            best = max(RULES, key=lambda r: rate(h[cell], r))
            got = rate(h[cell], best)
            verdict = "met" if now >= goal else "NOT met"
            print(
                f"  {half} {cell}: {100 * now:.1f}% (>= {100 * goal:.0f}%) {verdict}; "
                f"bound {100 * got:.1f}% ({best})"
            )
        alone = rate(h["planted alone"], "gamma")
        doc = rate(h["planted in doc"], "current decision (gamma, scan)")
        ratio = doc / alone if alone else math.nan
        print(
            f"  {half} planted: {100 * doc:.1f}% in the document, {100 * alone:.1f}% alone "
            f"(Gamma): {ratio:.2f}x (>= 0.5x) {'met' if ratio >= 0.5 else 'NOT met'}"
        )


if __name__ == "__main__":
    main()
