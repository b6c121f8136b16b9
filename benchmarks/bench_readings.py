"""Readings judged by what they buy: each reading of ``detector.reading.readings`` side by side
in one run, by the power it gives the decision, the false-positive rate of that decision per
genre over many keys, and the CPU one 300-token check's reading costs.

The weighted test's null holds for any weights computed from the text without the key, so a
reading need not equal the model's: it is judged here by power and false positives, not
fidelity.

Texts (scored as the product scores them: de-duplicated, the tokenizer's n-gram table's
common pairs unscored):

- power: the coding answers of ``bench_power`` (SmolLM2-135M-Instruct on vLLM, T = 0.7 /
  top-p 0.9, the benchmark key; 50 texts) after 50 / 100 / 200 tokens, and its creative
  answers (T = 0.7 / top-p 0.9, 40 texts), first 200 tokens with 20% of the tokens
  substituted by prose tokens (``--edit-draws`` edits of each). Generate both first:
  ``bench_power.py --generate-only --cells "code T=0.7 top-p 0.9,creative T=0.7 top-p 0.9"``;
- false positives: ``--chunks`` held-out 200-token chunks of prose, code, dpkg and apt
  (``benchmarks.dispersion``) and of the Japanese, Korean and Chinese message catalogs, under
  ``--keys`` random keys, at 50 / 100 / 200 tokens: the mean rate over keys x chunks, its
  95% interval over keys, the per-key variance / mean and the worst key.

Every text is read at T = 0.7 / top-p 0.9 (the target cell's sampling). Decisions at alpha
1%, one key: ``model-free`` is the product's decision without a reading (the Gamma sum and
the span scan, ``2 min(p_gamma, p_scan)``, ``detector.evidence.localize``); ``<reading>`` is
the product's decision with that reading (``2 min(p_document, p_weighted)``,
``rule.with_weighted``).

CPU: ``--cpu-texts`` 300-token chunks (half prose, half code), each read alone as a pasted
check reads it, process time (``time.process_time``), best of ``--repeats``, median over
texts, the reading loaded beforehand. Beside it: the share of 300-token checks the model-free
decision leaves undecided (three-way verdict ``inconclusive``) on prose, code and the
watermarked answers, and the mean CPU per check over the mix 70% prose / 20% code / 10%
watermarked when only those are read.

Readings are cached under ``$PROVENANCE_DATA_DIR/readings/``.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_readings.py
[--readings torch-f32,ort-f32,ort-int8,early-exit-24,ngram] [--chunks 40] [--keys 40]``
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from benchmarks.bench_generate import KEY  # noqa: E402
from benchmarks.bench_split import document_log10_p  # noqa: E402
from benchmarks.generations import cache_dir, fingerprint  # noqa: E402
from detector.core.config import as_key_config  # noqa: E402
from detector.core.stats import gamma_sf  # noqa: E402
from detector.decision.rule import LOG10_2  # noqa: E402
from detector.evidence import scan  # noqa: E402
from detector.evidence.detection import detect_config  # noqa: E402
from detector.evidence.localize import exp_scores  # noqa: E402
from detector.evidence.weighted import observed_weights, weighted_sf  # noqa: E402
from detector.reading.model import ModelReading  # noqa: E402

THRESHOLD = 0.01
LOG10_T = math.log10(THRESHOLD)
PREFIXES = (50, 100, 200)
T, P = 0.7, 0.9
CELLS = {"code": "code_T0.7_top-p_0.9.json", "creative": "creative_T0.7_top-p_0.9.json"}
MIX = {"prose": 0.7, "code": 0.2, "watermarked": 0.1}
TARGETS = {100: 0.65, 200: 0.85}
FPR_LIMIT, WORST_LIMIT, CPU_LIMIT = 0.012, 0.03, 0.3
CPU_LENGTH = 300
GAMMA_SHARE = 0.5  # the product's split of alpha today (detector.evidence.localize)


class Scored:
    """One text's scoring under one key: per prefix, the Gamma and scan log10 p, and the
    scores and scored mask the weighted test weighs."""

    def __init__(self, ids: np.ndarray, key: int, table: Any) -> None:
        config = as_key_config(key)
        det = detect_config(ids, config, THRESHOLD, ngrams=table)
        self.exp = exp_scores(det, config)
        self.mask = det.scored_mask
        self.scores = det.token_scores[det.scored_mask]
        where = np.flatnonzero(det.scored_mask)
        self.cut = {n: int(np.searchsorted(where, n)) for n in PREFIXES}
        self.gamma: dict[int, float] = {}
        self.scan: dict[int, float] = {}
        for n, k in self.cut.items():
            self.gamma[n] = gamma_sf(float(self.exp[:k].sum()), k)[1] if k else 0.0


def score_all(texts: list[np.ndarray], key: int, table: Any) -> list[Scored]:
    """Every text scored under ``key``, the scan's first window of each prefix batched."""
    out = [Scored(ids, key, table) for ids in texts]
    for n in PREFIXES:
        group = [s.exp[: s.cut[n]] for s in out]
        for s, e, w in zip(out, group, scan.best_windows(group), strict=True):
            s.scan[n] = 0.0 if w is None else scan.scan_log10_p(w.log10_p, e.shape[0])
    return out


def weighted_log10_p(s: Scored, weights: np.ndarray, n: int, level: float) -> float:
    """The weighted test's log10 p of the first ``n`` tokens; 0 when its score lies under
    its null mean plus two standard deviations (its tail there is above 2%, far above
    ``level``, the decision's line for it)."""
    k = s.cut[n]
    w = weights[:k]
    score = float((w * s.scores[:k]).sum())
    if score <= w.sum() + 2.0 * math.sqrt(float((w * w).sum())):
        return 0.0
    lp = weighted_sf(w, score)[1]
    return lp if lp <= level + 1.0 else 0.0


def decisions(s: Scored, weights: np.ndarray | None) -> dict[int, bool]:
    """The product's flag after each prefix: model-free, or with the reading's weights."""
    out = {}
    for n in PREFIXES:
        doc = float(document_log10_p(np.array([s.gamma[n], s.scan[n]]), GAMMA_SHARE))
        if weights is not None:
            wlp = weighted_log10_p(s, weights, n, LOG10_T - LOG10_2)
            doc = min(0.0, LOG10_2 + min(doc, wlp))
        out[n] = doc <= LOG10_T
    return out


def scored_weights(reading: ModelReading, s: Scored, width: int = 4) -> np.ndarray:
    return observed_weights(reading.observed, width)[s.mask]


def load_texts(args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.bench_public import catalog_chunks
    from benchmarks.corpus import english_prose
    from benchmarks.robustness.edits import edit
    from detector.text.tokenizers import load_tokenizer

    tok = load_tokenizer()
    cells = {}
    for name, file in CELLS.items():
        data = json.loads((cache_dir("power") / file).read_text())
        cells[name] = [np.asarray(x, np.int64) for x in data["token_ids"]]
    prose = np.asarray(tok.encode(english_prose()), np.int64)
    rng = np.random.default_rng(20)
    creative = [
        edit(ids[:200], "substitute", 0.2, prose, rng)
        for ids in cells["creative"]
        for _ in range(args.edit_draws)
    ]
    from benchmarks.dispersion import chunks as cut
    from benchmarks.dispersion import genre_documents, split

    held_out = {  # tokenized once: each genre's held-out half
        g: split([np.asarray(tok.encode(d), np.int64) for d in docs])[1]
        for g, docs in genre_documents().items()
    }

    def human_chunks(limit: int, size: int) -> dict[str, list[np.ndarray]]:
        return {g: cut(docs, size, limit) for g, docs in held_out.items()}

    human = human_chunks(args.chunks, 200)
    for language in ("ja", "ko", "zh_Hans"):
        found = catalog_chunks(tok, language, args.chunks, 200)
        human[f"cjk {language}"] = [np.asarray(tok.encode(t), np.int64) for t in found]
    per = max(1, args.cpu_texts // 2)
    cpu = human_chunks(per, CPU_LENGTH)
    longer = human_chunks(args.undecided, CPU_LENGTH)
    checks = {
        "prose": longer["prose"],
        "code": longer["code"],
        "watermarked": cells["code"],
    }
    return {
        "power": {"code": cells["code"], "creative sub 20%": creative},
        "human": human,
        "cpu": cpu["prose"][:per] + cpu["code"][:per],
        "checks": checks,
        "table": tok.ngram_table,
        "tokenizer": tok,
    }


def read_cached(name: str, reader: Any, group: str, texts: list[np.ndarray]) -> list[Any]:
    """The reading of ``texts`` (cached by reading, group and texts)."""
    spec = {"ids": [x.tolist() for x in texts], "t": T, "p": P, "reading": name}
    path = cache_dir("readings") / f"{name}-{group.replace(' ', '_')}-{fingerprint(spec)}.npz"
    if path.is_file():
        with np.load(path) as got:
            return [ModelReading(got[f"e{i}"], got[f"o{i}"]) for i in range(len(texts))]
    out = reader().read(texts, temperature=T, top_p=P)
    arrays = {f"e{i}": r.expected for i, r in enumerate(out)}
    np.savez(path, **arrays, **{f"o{i}": r.observed for i, r in enumerate(out)})
    return out


def cpu_per_check(reading: Any, texts: list[np.ndarray], repeats: int) -> float:
    best = []
    for ids in texts:
        runs = []
        for _ in range(repeats):
            t0 = time.process_time()
            reading.read([ids], temperature=T, top_p=P)
            runs.append(time.process_time() - t0)
        best.append(min(runs))
    return float(np.median(best))


def undecided_shares(checks: dict[str, list[np.ndarray]], table: Any) -> dict[str, float]:
    """Share of each kind of check the model-free decision leaves inconclusive."""
    from detector.decision.decide import decide_many
    from detector.evidence.detection import Document

    config = as_key_config(KEY)
    out = {}
    for kind, texts in checks.items():
        found = decide_many([[Document(ids, [config], ngrams=table)] for ids in texts])
        out[kind] = float(np.mean([d.verdict == "inconclusive" for d in found]))
    return out


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readings", default="torch-f32,ort-f32,ort-int8,early-exit-24,ngram")
    parser.add_argument("--chunks", type=int, default=40, help="human chunks per corpus")
    parser.add_argument("--keys", type=int, default=40)
    parser.add_argument("--edit-draws", type=int, default=2)
    parser.add_argument("--cpu-texts", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--undecided", type=int, default=100, help="300-token checks per kind")
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="only read the texts and cache the readings (run one process per reading, then "
        "the whole benchmark once)",
    )
    args = parser.parse_args()
    from detector.reading.readings import check_reading, load_reading, needs_model
    from generator.models import embedded_model_dir

    names = [check_reading(n.strip()) for n in args.readings.split(",") if n.strip()]
    t0, c0 = time.time(), time.process_time()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M')} load {os.getloadavg()[0]:.1f}; readings "
        f"{', '.join(names)}; alpha {THRESHOLD}",
        flush=True,
    )
    data = load_texts(args)
    table = data["table"]
    model_dir = str(embedded_model_dir())
    keys = [int(k) for k in np.random.default_rng(7).integers(1, 2**63, args.keys)]
    if args.read_only:
        for only in names:
            reading = load_reading(only, model_dir if needs_model(only) else None)
            groups = [*data["power"].items()]
            groups += [(f"human {g}", texts) for g, texts in data["human"].items()]
            for label, texts in groups:
                read_cached(only, lambda r=reading: r, label, texts)
            print(f"{only} read in {time.process_time() - c0:.0f} s CPU", flush=True)
        return

    # Scoring, shared by every reading: the benchmark key on the power cells, the random keys
    # on the human corpora.
    power_scored = {c: score_all(v, KEY, table) for c, v in data["power"].items()}
    human_scored = {g: [score_all(v, k, table) for k in keys] for g, v in data["human"].items()}
    print(f"scored in {time.process_time() - c0:.0f} s CPU", flush=True)

    rows: dict[str, dict[str, Any]] = {}
    for name in [None, *names]:
        label = "model-free" if name is None else name
        c1 = time.process_time()
        row: dict[str, Any] = {}

        def reader(n: str = name or "") -> Any:
            return load_reading(n, model_dir if needs_model(n) else None)

        for cell, texts in data["power"].items():
            reads = None if name is None else read_cached(name, reader, cell, texts)
            hits = []
            for i, s in enumerate(power_scored[cell]):
                w = None if reads is None else scored_weights(reads[i], s)
                hits.append(decisions(s, w))
            row[cell] = {n: float(np.mean([h[n] for h in hits])) for n in PREFIXES}
        for genre, texts in data["human"].items():
            reads = None if name is None else read_cached(name, reader, f"human {genre}", texts)
            counts = np.zeros((len(keys), len(PREFIXES)))
            for k in range(len(keys)):
                for i, s in enumerate(human_scored[genre][k]):
                    w = None if reads is None else scored_weights(reads[i], s)
                    got = decisions(s, w)
                    counts[k] += [got[n] for n in PREFIXES]
            row[f"fpr {genre}"] = (counts, len(texts))
        row["read seconds"] = time.process_time() - c1
        if name is not None:
            reading = reader()
            row["cpu"] = cpu_per_check(reading, data["cpu"], args.repeats)
        rows[label] = row
        print(
            f"{label}: {row['read seconds']:.0f} s CPU (reading and deciding), "
            f"{time.time() - t0:.0f} s wall, load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    shares = undecided_shares(data["checks"], table)
    report(rows, shares, len(keys), args)
    print(f"\ntotal {time.time() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU")


def report(rows: dict[str, dict[str, Any]], shares: dict[str, float], nkeys: int, args) -> None:
    genres = [k[4:] for k in next(iter(rows.values())) if k.startswith("fpr ")]
    read_share = sum(MIX[k] * shares[k] for k in MIX)
    print(
        "\nundecided by the model-free decision (300-token checks; watermarked: the code "
        "answers): "
        + ", ".join(f"{k} {pct(v)}%" for k, v in shares.items())
        + f"; read in the mix 70/20/10: {pct(read_share)}%"
    )
    print(
        f"\n| reading | code 50 / 100 / 200 % | creative sub 20% at 200 % "
        f"| CPU per {CPU_LENGTH}-token check s | mean CPU per check, mix s "
        "| code % per CPU-second at 100 / 200 | targets |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    free = rows["model-free"]
    for label, row in rows.items():
        code = row["code"]
        cpu = row.get("cpu", 0.0)
        mix = read_share * cpu
        gain = (
            " / ".join(f"{100 * (code[n] - free['code'][n]) / cpu:.0f}" for n in (100, 200))
            if cpu
            else "–"
        )
        fpr_ok = all(
            row[f"fpr {g}"][0][:, -1].mean() / row[f"fpr {g}"][1] <= FPR_LIMIT
            and row[f"fpr {g}"][0][:, -1].max() / row[f"fpr {g}"][1] <= WORST_LIMIT
            for g in genres
        )
        met = all(code[n] >= goal for n, goal in TARGETS.items()) and fpr_ok and mix < CPU_LIMIT
        print(
            f"| {label} | "
            + " / ".join(pct(code[n]) for n in PREFIXES)
            + f" | {pct(row['creative sub 20%'][200])} | {cpu:.3f} | {mix:.3f} | {gain} "
            f"| {'met' if met else 'not met'} |"
        )
    print(
        f"\nfalse positives, {nkeys} random keys: mean % at 50 / 100 / 200 tokens; at 200: "
        "95% interval over keys, variance / mean of the per-key counts, worst key %"
    )
    sizes = {g: rows["model-free"][f"fpr {g}"][1] for g in genres}
    print("| reading | " + " | ".join(f"{g} (n={sizes[g]})" for g in genres) + " |")
    print("| --- " * (len(genres) + 1) + "|")
    for label, row in rows.items():
        cells = []
        for g in genres:
            counts, n = row[f"fpr {g}"]
            means = counts.mean(0) / n
            c = counts[:, -1]
            half = 1.96 * c.std(ddof=1) / math.sqrt(nkeys) / n
            disp = c.var(ddof=1) / max(c.mean(), 1e-12)
            cells.append(
                " / ".join(pct(m) for m in means)
                + f"; {pct(max(0.0, means[-1] - half))}-{pct(means[-1] + half)}, "
                f"{disp:.2f}, worst {pct(c.max() / n)}"
            )
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
