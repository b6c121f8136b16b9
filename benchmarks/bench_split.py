"""The split of alpha between the Gamma sum and the span scan in the model-free decision:
the false-positive rate of each split over hundreds of keys on the human corpora, with the
estimate's own spread, and the power each split buys on the code answers, in one run.

The decision's document p-value for one key is ``min(p_gamma / w, p_scan / (1 - w))``
(weighted Bonferroni: the Gamma sum tested at ``w alpha``, the scan at ``(1 - w) alpha``);
``w = 0.5`` is ``2 min(p_gamma, p_scan)``. Both p-values are computed once per (chunk, key,
prefix) exactly as the product computes them (``detect_config`` with the tokenizer's n-gram
table, ``localize.exp_scores``, the scan's calibrated ``scan_log10_p``) and kept, so every
split is read from the same draws.

Corpora: ``--chunks`` held-out 200-token chunks of prose, code, dpkg and apt
(``benchmarks.dispersion``) and every 200-token chunk of the Japanese, Korean and Chinese
message catalogs (whose chunks repeat the same interface strings, so that under one key
their tests move together), under ``--keys`` random keys, at 50, 100 and 200 tokens.
Spread: the per-key flag counts' variance over their mean (1 for independent tests, above
for chunks that share pairs), the worst key, and a 95% interval for the mean over keys
(``mean +- 1.96 sd / sqrt(keys)``: keys are independent draws; the chunks are fixed).

Power: the code answers at T = 0.7 / top-p 0.9 of ``bench_power`` (cached; generate them
with ``bench_power.py --generate-only --cells "code T=0.7 top-p 0.9"``) under the benchmark
key after 50 / 100 / 200 tokens, when they are cached; and the planted cell of
``bench_gof``: the first 120 tokens of each code answer inside 1,200 tokens of prose, beside
the 120 tokens alone, with the false-positive rate of 1,200-token prose documents (one random
key each). ``--planted-only`` adds the planted cell to saved p-values.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_split.py [--keys 400]
[--chunks 150]``; the p-values are saved to ``$PROVENANCE_DATA_DIR/split/pvalues.npz``
(``--report`` prints the table again from it without rescoring).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from benchmarks.bench_generate import KEY  # noqa: E402
from benchmarks.generations import cache_dir  # noqa: E402
from detector.core.config import as_key_config  # noqa: E402
from detector.core.stats import gamma_sf  # noqa: E402
from detector.evidence import scan  # noqa: E402
from detector.evidence.detection import detect_config  # noqa: E402
from detector.evidence.localize import exp_scores  # noqa: E402

THRESHOLD = 0.01
PREFIXES = (50, 100, 200)
SPLITS = (0.5, 0.6, 0.7, 0.8, 0.9)  # the Gamma sum's share of alpha
CODE_CELL = "code_T0.7_top-p_0.9.json"
PLANT, AROUND = 120, 1200  # bench_gof's planted cell
WHOLE = (math.inf,)  # ``pvalues``'s length for a whole piece


def pvalues(
    pieces: list[np.ndarray],
    key: int | list[int],
    table,
    lengths: tuple[float, ...] = PREFIXES,
) -> np.ndarray:
    """``[2, lengths, pieces]``: log10 p of the Gamma sum and of the span scan of each
    piece's first 50 / 100 / 200 tokens (``lengths``; ``math.inf``: the whole piece) under
    ``key`` (or ``key[i]`` for piece i), as the product scores them."""
    keys = key if isinstance(key, list) else [key] * len(pieces)
    exps = []
    for ids, k in zip(pieces, keys, strict=True):
        config = as_key_config(k)
        det = detect_config(ids, config, THRESHOLD, ngrams=table)
        exp = exp_scores(det, config)
        where = np.flatnonzero(det.scored_mask)
        exps.append([exp[: int(np.searchsorted(where, n))] for n in lengths])
    out = np.zeros((2, len(lengths), len(pieces)))
    for j in range(len(lengths)):
        group = [e[j] for e in exps]
        windows = scan.best_windows(group)
        for i, (exp, w) in enumerate(zip(group, windows, strict=True)):
            n = exp.shape[0]
            out[0, j, i] = gamma_sf(float(exp.sum()), n)[1] if n else 0.0
            out[1, j, i] = 0.0 if w is None else scan.scan_log10_p(w.log10_p, n)
    return out


def document_log10_p(p: np.ndarray, share: float) -> np.ndarray:
    """``min(p_gamma / w, p_scan / (1 - w))`` in log10, from ``p[0]`` (Gamma) and ``p[1]``."""
    return np.minimum(0.0, np.minimum(p[0] - math.log10(share), p[1] - math.log10(1.0 - share)))


def planted(arrays: dict[str, np.ndarray], docs: int) -> None:
    """The planted cell into ``arrays``: each code answer's first 120 tokens inside 1,200
    prose tokens (``bench_gof``'s construction and seeds), the 120 tokens alone, and
    ``docs`` prose-only documents of 1,200 tokens, each under its own random key."""
    from benchmarks.corpus import english_prose
    from detector.text.tokenizers import load_tokenizer

    code = cache_dir("power") / CODE_CELL
    if not code.is_file():
        return
    tok = load_tokenizer()
    prose = np.asarray(tok.encode(english_prose()), np.int64)
    texts = [np.asarray(x, np.int64) for x in json.loads(code.read_text())["token_ids"]]
    rng = np.random.default_rng(11)
    inside, alone = [], []
    for ids in texts:
        span = ids[:PLANT]
        start = int(rng.integers(0, prose.shape[0] - AROUND))
        body = prose[start : start + AROUND]
        cut = int(rng.integers(100, AROUND - 100))
        inside.append(np.concatenate([body[:cut], span, body[cut:]]))
        alone.append(span)
    arrays["planted/in doc"] = pvalues(inside, KEY, tok.ngram_table, WHOLE)[None]
    arrays["planted/alone"] = pvalues(alone, KEY, tok.ngram_table, WHOLE)[None]
    rng = np.random.default_rng(12)
    keys = [int(k) for k in np.random.default_rng(43).integers(1, 2**63, docs)]
    bodies = []
    for _ in range(docs):
        start = int(rng.integers(0, prose.shape[0] - AROUND))
        bodies.append(prose[start : start + AROUND])
    arrays["planted/human docs"] = pvalues(bodies, keys, tok.ngram_table, WHOLE)[None]


def corpora(chunks: int) -> dict[str, list[np.ndarray]]:
    from benchmarks.bench_public import catalog_chunks
    from benchmarks.dispersion import chunks as cut
    from benchmarks.dispersion import genre_documents, split
    from detector.text.tokenizers import load_tokenizer

    tok = load_tokenizer()
    out: dict[str, list[np.ndarray]] = {}
    for genre, docs in genre_documents().items():
        _, test = split([np.asarray(tok.encode(d), np.int64) for d in docs])
        out[genre] = cut(test, 200, chunks)
    for language in ("ja", "ko", "zh_Hans"):
        found = catalog_chunks(tok, language, chunks, 200)
        out[f"cjk {language}"] = [np.asarray(tok.encode(t), np.int64) for t in found]
    return out


def measure(args: argparse.Namespace, path: Path) -> None:
    from detector.text.tokenizers import load_tokenizer

    t0, c0 = time.time(), time.process_time()
    table = load_tokenizer().ngram_table
    found = corpora(args.chunks)
    keys = [int(k) for k in np.random.default_rng(41).integers(1, 2**63, args.keys)]
    arrays: dict[str, np.ndarray] = {"keys": np.asarray(keys, np.uint64)}
    for name, pieces in found.items():
        got = np.stack([pvalues(pieces, key, table) for key in keys])  # [keys, 2, prefixes, n]
        arrays[f"fpr/{name}"] = got
        print(
            f"{name}: {len(pieces)} chunks x {len(keys)} keys, {time.time() - t0:.0f} s wall, "
            f"{time.process_time() - c0:.0f} s CPU, load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    code = cache_dir("power") / CODE_CELL
    if code.is_file():
        texts = [np.asarray(x, np.int64) for x in json.loads(code.read_text())["token_ids"]]
        arrays["power/code"] = pvalues(texts, KEY, table)[None]
    planted(arrays, args.planted_docs)
    np.savez_compressed(path, **arrays)  # type: ignore[arg-type]
    print(
        f"scored in {time.time() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU; "
        f"saved {path}",
        flush=True,
    )


def report(path: Path) -> None:
    limit = math.log10(THRESHOLD)
    with np.load(path) as got:
        data = {k: got[k] for k in got.files}
    nkeys = data["keys"].shape[0]
    print(f"\nfalse positives at alpha {THRESHOLD}, {nkeys} random keys")
    print(
        "| split (Gamma / scan) | corpus | chunks | mean FPR % at 50 / 100 / 200 tokens "
        "| 95% CI at 200 % | variance / mean at 200 | worst key % at 200 |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    worst: dict[float, tuple[float, str]] = {}
    for share in SPLITS:
        for name in [k for k in data if k.startswith("fpr/")]:
            p = data[name]  # [keys, 2, prefixes, chunks]
            n = p.shape[-1]
            flags = document_log10_p(np.moveaxis(p, 1, 0), share) <= limit  # [keys, pre, n]
            counts = flags.sum(-1)  # [keys, prefixes]
            means = counts.mean(0) / n
            c200 = counts[:, -1]
            half = 1.96 * c200.std(ddof=1) / math.sqrt(nkeys) / n
            disp = c200.var(ddof=1) / max(c200.mean(), 1e-12)
            top = float(means.max())
            if top > worst.get(share, (-1.0, ""))[0]:
                worst[share] = (top, name[4:])
            print(
                f"| {share:g} / {1 - share:g} | {name[4:]} | {n} | "
                + " / ".join(f"{100 * m:.2f}" for m in means)
                + f" | {100 * max(0.0, means[-1] - half):.2f}-{100 * (means[-1] + half):.2f} "
                f"| {disp:.2f} | {100 * c200.max() / n:.1f} |"
            )
    print("\nlargest mean FPR over corpora and prefixes, per split:")
    for share, (top, name) in worst.items():
        print(f"  {share:g} / {1 - share:g}: {100 * top:.2f}% ({name})")
    if "power/code" in data:
        p = data["power/code"][0]  # [2, prefixes, texts]
        print(f"\npower, code answers T = 0.7 / top-p 0.9 ({p.shape[-1]} texts), benchmark key:")
        print("| split | detected at 50 / 100 / 200 tokens % |\n| --- | --- |")
        alone = (p[0] <= limit).mean(-1)
        print("| Gamma sum alone | " + " / ".join(f"{100 * r:.0f}" for r in alone) + " |")
        for share in SPLITS:
            hits = (document_log10_p(p, share) <= limit).mean(-1)
            shown = " / ".join(f"{100 * r:.0f}" for r in hits)
            print(f"| {share:g} / {1 - share:g} | {shown} |")
    if "planted/in doc" in data:
        inside, alone = data["planted/in doc"][0], data["planted/alone"][0]
        human = data["planted/human docs"][0]
        print(
            f"\nplanted: {PLANT} code tokens inside {AROUND} prose tokens ({inside.shape[-1]} "
            f"documents), the same tokens alone; FPR on {human.shape[-1]} prose documents of "
            f"{AROUND} tokens (one random key each)"
        )
        print("| split | in the document % | alone % | ratio | FPR 1,200-token docs % |")
        print("| --- | --- | --- | --- | --- |")
        for share in SPLITS:
            doc = float((document_log10_p(inside, share) <= limit).mean())
            one = float((document_log10_p(alone, share) <= limit).mean())
            fpr = float((document_log10_p(human, share) <= limit).mean())
            print(
                f"| {share:g} / {1 - share:g} | {100 * doc:.0f} | {100 * one:.0f} | "
                f"{doc / one if one else math.nan:.2f} | {100 * fpr:.2f} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=400)
    parser.add_argument("--chunks", type=int, default=150, help="chunks per corpus (at most)")
    parser.add_argument("--report", action="store_true", help="print from the saved p-values")
    parser.add_argument("--planted-docs", type=int, default=400, help="prose-only documents")
    parser.add_argument(
        "--planted-only", action="store_true", help="add the planted cell to saved p-values"
    )
    args = parser.parse_args()
    path = cache_dir("split") / "pvalues.npz"
    print(f"{time.strftime('%Y-%m-%d %H:%M')} load {os.getloadavg()[0]:.1f}", flush=True)
    if args.planted_only:
        with np.load(path) as got:
            arrays = {k: got[k] for k in got.files}
        c0 = time.process_time()
        planted(arrays, args.planted_docs)
        np.savez_compressed(path, **arrays)  # type: ignore[arg-type]
        print(f"planted cell scored in {time.process_time() - c0:.0f} s CPU", flush=True)
    elif not args.report:
        measure(args, path)
    report(path)


if __name__ == "__main__":
    main()
