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
1%, one key, through the product's ``decide_many``: ``model-free`` is the decision of a
surface that never reads (the Gamma sum and the span scan, ``detector.evidence.localize``);
``<reading>`` is the product's adaptive decision with that reading: the model-free stage with
the reading's share set aside (``rule.with_weighted``), then the reading stage on the texts
that stage left undecided (``Decision.needs_reading``) and on no other. The share of human
texts read is printed beside each corpus's rate.

CPU: ``--cpu-texts`` 300-token chunks (half prose, half code), each read alone as a pasted
check reads it, process time (``time.process_time``), best of ``--repeats``, median over
texts, the reading loaded beforehand; the model-free stage's CPU on the same texts. Beside
it: the share of 300-token checks the model-free stage leaves undecided on prose, code and
the watermarked answers, and the mean CPU per check over the mix 70% prose / 20% code / 10%
watermarked (the model-free stage for every check, the reading for the undecided ones).

Readings are cached under ``$PROVENANCE_DATA_DIR/readings/``.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_readings.py
[--readings torch-f32,ort-f32,ort-int8,early-exit-24,ngram] [--chunks 40] [--keys 40]``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from benchmarks.bench_generate import KEY  # noqa: E402
from benchmarks.bench_reading_cpu import cpu_per_check  # noqa: E402
from benchmarks.generations import cache_dir, fingerprint  # noqa: E402
from detector.core.config import as_key_config  # noqa: E402
from detector.decision import rule  # noqa: E402
from detector.decision.decide import decide_many  # noqa: E402
from detector.evidence.detection import Document  # noqa: E402
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


class Stage:
    """The model-free stage of the product's adaptive decision on a group of texts under one
    key, after each prefix: ``flag[n]`` (watermarked at once), ``due[n]`` (left undecided,
    so a reading is due) and ``plain[n]`` (the decision of a surface that never reads:
    public verification, streams; the full threshold on the model-free tests)."""

    def __init__(self, texts: list[np.ndarray], key: int, table: Any) -> None:
        config = as_key_config(key)
        self.config, self.table, self.texts = config, table, texts
        self.flag: dict[int, np.ndarray] = {}
        self.due: dict[int, np.ndarray] = {}
        self.plain: dict[int, np.ndarray] = {}
        for n in PREFIXES:
            docs = [[Document(ids[:n], [config], ngrams=table)] for ids in texts]
            first = decide_many(docs, reserve=[[True]] * len(texts))
            self.flag[n] = np.array([d.is_watermarked for d in first])
            self.due[n] = np.array([d.needs_reading for d in first])
            plain = decide_many(docs)
            self.plain[n] = np.array([d.is_watermarked for d in plain])

    def final(self, reads: list[Any]) -> dict[int, np.ndarray]:
        """The final flags when the texts left undecided are read (``reads[i]``: text i's
        reading): the reading stage through the product's ``decide_many``."""
        out = {}
        for n in PREFIXES:
            flags = self.flag[n].copy()
            due = np.flatnonzero(self.due[n])
            if due.size:
                docs = [
                    [
                        Document(
                            self.texts[i][:n],
                            [self.config],
                            reads[i].expected[:n],
                            ngrams=self.table,
                            observed_scores=reads[i].observed[:n],
                        )
                    ]
                    for i in due
                ]
                second = decide_many(docs, reserve=[[True]] * len(docs))
                flags[due] = [d.is_watermarked for d in second]
            out[n] = flags
        return out


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


def stage_cpu(texts: list[np.ndarray], table: Any, repeats: int) -> float:
    """CPU of the model-free stage of one check (one text per call), best of ``repeats``
    (at least 3), median over texts."""
    config = as_key_config(KEY)
    best = []
    for ids in texts:
        runs = []
        for _ in range(max(repeats, 3)):
            t0 = time.process_time()
            decide_many([[Document(ids, [config], ngrams=table)]], reserve=[[True]])
            runs.append(time.process_time() - t0)
        best.append(min(runs))
    return float(np.median(best))


def undecided_shares(checks: dict[str, list[np.ndarray]], table: Any) -> dict[str, float]:
    """Share of each kind of check the model-free stage of the adaptive decision leaves
    undecided (the reading's share of the level set aside, as on a worker with a reading)."""
    config = as_key_config(KEY)
    out = {}
    for kind, texts in checks.items():
        docs = [[Document(ids, [config], ngrams=table)] for ids in texts]
        found = decide_many(docs, reserve=[[True]] * len(docs))
        out[kind] = float(np.mean([d.needs_reading for d in found]))
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
        "--reading-shares",
        default="",
        help="reading stage's shares of the level to compare (comma-separated; default: the "
        "product's, detector.decision.rule.READING_SHARE)",
    )
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

    base = rule.READING_SHARE
    shares = [float(x) for x in args.reading_shares.split(",")] if args.reading_shares else [base]
    rows: dict[str, dict[str, Any]] = {}
    cpu_of: dict[str, float] = {}
    first = stage_cpu(data["cpu"], table, args.repeats)
    for share in shares:
        with reading_share(share):
            rows.update(measure_share(share, base, names, data, keys, model_dir, args, cpu_of))
    report(rows, first, len(keys), args)
    print(f"\ntotal {time.time() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU")


@contextlib.contextmanager
def reading_share(share: float) -> Iterator[None]:
    """The product's decision with the reading stage's share of the level at ``share`` for
    the time of the block (``detector.decision.rule``; a sweep of what-ifs, the product's
    own value is the default)."""
    saved = (rule.READING_SHARE, rule._LOG10_MODEL_FREE, rule._LOG10_READING)
    if not 0.0 < share < 1.0:
        raise ValueError("a reading share lies in (0, 1)")
    rule.READING_SHARE = share
    rule._LOG10_MODEL_FREE, rule._LOG10_READING = math.log10(1.0 - share), math.log10(share)
    try:
        yield
    finally:
        rule.READING_SHARE, rule._LOG10_MODEL_FREE, rule._LOG10_READING = saved


def measure_share(
    share: float,
    base: float,
    names: list[str],
    data: dict[str, Any],
    keys: list[int],
    model_dir: str,
    args: argparse.Namespace,
    cpu_of: dict[str, float],
) -> dict[str, dict[str, Any]]:
    """Every reading's row at one reading share (the model-free row at the product's)."""
    from detector.reading.readings import load_reading, needs_model

    t0, c0 = time.time(), time.process_time()
    table = data["table"]
    # The model-free stage, shared by every reading: the benchmark key on the power cells,
    # the random keys on the human corpora.
    power_stage = {c: Stage(v, KEY, table) for c, v in data["power"].items()}
    human_stage = {g: [Stage(v, k, table) for k in keys] for g, v in data["human"].items()}
    mix = undecided_shares(data["checks"], table)
    print(
        f"reading share {share:g}: model-free stage decided in "
        f"{time.process_time() - c0:.0f} s CPU",
        flush=True,
    )
    rows: dict[str, dict[str, Any]] = {}
    tag = "" if share == base else f" (s = {share:g})"
    for name in ([None] if share == base else []) + names:
        label = ("model-free" if name is None else name) + tag
        c1 = time.process_time()
        row: dict[str, Any] = {"mix": mix if name is not None else None}

        def reader(n: str = name or "") -> Any:
            return load_reading(n, model_dir if needs_model(n) else None)

        for cell, texts in data["power"].items():
            stage = power_stage[cell]
            if name is None:
                got = stage.plain
            else:
                got = stage.final(read_cached(name, reader, cell, texts))
            row[cell] = {n: float(got[n].mean()) for n in PREFIXES}
        for genre, texts in data["human"].items():
            reads = None if name is None else read_cached(name, reader, f"human {genre}", texts)
            counts = np.zeros((len(keys), len(PREFIXES)))
            read = np.zeros((len(keys), len(PREFIXES)))
            for k, stage in enumerate(human_stage[genre]):
                got = stage.plain if reads is None else stage.final(reads)
                counts[k] = [got[n].sum() for n in PREFIXES]
                read[k] = [stage.due[n].sum() for n in PREFIXES]
            row[f"fpr {genre}"] = (counts, len(texts))
            row[f"read {genre}"] = read.sum(0) / (len(keys) * len(texts))
        row["read seconds"] = time.process_time() - c1
        if name is not None:
            if name not in cpu_of:
                cpu_of[name] = cpu_per_check(reader(), data["cpu"], args.repeats, T, P)
            row["cpu"] = cpu_of[name]
        rows[label] = row
        print(
            f"{label}: {row['read seconds']:.0f} s CPU (reading and deciding), "
            f"{time.time() - t0:.0f} s wall, load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    return rows


def report(rows: dict[str, dict[str, Any]], first: float, nkeys: int, args) -> None:
    genres = [k[4:] for k in next(iter(rows.values())) if k.startswith("fpr ")]
    print(
        f"\nthe model-free stage: {1000 * first:.1f} ms CPU per {CPU_LENGTH}-token check; "
        "undecided by it (300-token checks; watermarked: the code answers), per reading share:"
    )
    seen: set[str] = set()
    for label, row in rows.items():
        mix = row.get("mix")
        key = label.partition(" (s = ")[2].rstrip(")") or f"{rule.READING_SHARE:g} (the product's)"
        if mix is None or key in seen:
            continue
        seen.add(key)
        read = sum(MIX[k] * mix[k] for k in MIX)
        print(
            f"  {key}: "
            + ", ".join(f"{k} {pct(mix[k])}%" for k in MIX)
            + f"; read in the mix 70/20/10: {pct(read)}%"
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
        shares = row.get("mix")
        read_share = 0.0 if shares is None else sum(MIX[k] * shares[k] for k in MIX)
        mix = first + read_share * cpu
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
        "95% interval over keys, variance / mean of the per-key counts, worst key %, share "
        "of the chunks read %"
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
            read = row.get(f"read {g}")
            shown = "" if label == "model-free" or read is None else f", read {pct(read[-1])}"
            cells.append(
                " / ".join(pct(m) for m in means)
                + f"; {pct(max(0.0, means[-1] - half))}-{pct(means[-1] + half)}, "
                f"{disp:.2f}, worst {pct(c.max() / n)}{shown}"
            )
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
