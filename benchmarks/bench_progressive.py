"""The progressive answer, side by side in one run: the first answer (the model-free stage,
``decide_texts(..., reading="defer")``, what a pasted check answers in the request) against
today's inline path (the model-free decision without a reading, ``reading="never"``), and the
final answer of a text that stage leaves undecided (``reading="read"``: the model-free stage
again, the reading, the reading stage and the heatmap, what the worker's reading task runs)
on an idle worker (the reading loaded once before timing, as a worker loads it at start).

Texts: the power benchmark's cached code answers (SmolLM2 at T = 0.7 / top-p 0.9, under the
benchmark key) cut to ``--tokens`` tokens, and as many held-out human prose chunks of the
same length (``benchmarks.dispersion``), checked under the benchmark key with the embedded
tokenizer's n-gram table, heatmap included, each call one text. Wall and CPU seconds per call,
the best of ``--repeats``, medians over texts; the reading is ``PROVENANCE_READING``'s
(``ort-f32`` by default). The machine is shared: the load average is printed.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_progressive.py [--texts 8]``
(the first run exports the ONNX graphs under the data directory, about two minutes).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from benchmarks.bench_generate import KEY  # noqa: E402
from benchmarks.bench_reading_cpu import watermarked_answers  # noqa: E402

FINAL_BOUND_S = 3.0


def timed(fn: Any, repeats: int) -> tuple[float, float, Any]:
    best_wall, best_cpu, out = float("inf"), float("inf"), None
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        best_wall = min(best_wall, time.perf_counter() - w)
        best_cpu = min(best_cpu, time.process_time() - c)
    return best_wall, best_cpu, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=2, help="of each final answer")
    parser.add_argument("--repeats-fast", type=int, default=10, help="of each first answer")
    parser.add_argument("--reading", default=os.environ.get("PROVENANCE_READING", "ort-f32"))
    args = parser.parse_args()

    from benchmarks.bench_power import human_chunks
    from detector.core.config import KeyConfig
    from detector.decision.text import TextGroup, decide_texts
    from detector.reading.choice import load_reading
    from detector.text.tokenizers import load_tokenizer
    from generator.models import embedded_model_dir

    tok = load_tokenizer("default")
    config = KeyConfig(key=KEY)
    code = [tok.decode(list(ids[: args.tokens])) for ids in watermarked_answers(args.texts)]
    prose = [tok.decode(list(c)) for c in human_chunks(args.texts, args.tokens)["prose"]]
    t0 = time.perf_counter()
    reading = load_reading(str(embedded_model_dir()), args.reading)
    reading.read([tok.encode(code[0])])  # warm: an idle worker has read before
    print(f"reading {args.reading} loaded and warm in {time.perf_counter() - t0:.1f} s")
    print(f"load average at start: {os.getloadavg()}")
    plain = [TextGroup(tok, [config])]
    adaptive = [TextGroup(tok, [config], reader=lambda: reading)]

    def one(text: str, groups: list[TextGroup], mode: str) -> Any:
        return decide_texts([text], groups, reading=mode, heatmap=True)[0]

    rows = []
    for kind, texts in (("code", code), ("prose", prose)):
        for text in texts:
            inline = timed(lambda t=text: one(t, plain, "never"), args.repeats_fast)
            first = timed(lambda t=text: one(t, adaptive, "defer"), args.repeats_fast)
            row = {"kind": kind, "inline": inline, "first": first, "state": first[2].reading}
            if first[2].reading == "pending":
                row["final"] = timed(lambda t=text: one(t, adaptive, "read"), args.repeats)
            rows.append(row)

    def med(values: list[float]) -> float:
        return float(np.median(values)) if values else float("nan")

    print(
        f"\n{'texts':<24} {'n':>3} {'inline ms':>10} {'first ms':>10} {'ratio':>6} "
        f"{'inline CPU':>10} {'first CPU':>10} {'undecided':>9} {'final s (wall)':>14} "
        f"{'final CPU s':>11} {'<= 3 s':>7}"
    )
    for kind in ("code", "prose", "all"):
        sel = [r for r in rows if kind in ("all", r["kind"])]
        inline_ms = med([r["inline"][0] * 1e3 for r in sel])
        first_ms = med([r["first"][0] * 1e3 for r in sel])
        inline_cpu = med([r["inline"][1] * 1e3 for r in sel])
        first_cpu = med([r["first"][1] * 1e3 for r in sel])
        finals = [r["final"] for r in sel if "final" in r]
        within = sum(f[0] <= FINAL_BOUND_S for f in finals)
        print(
            f"{kind + ' ' + str(args.tokens) + ' tokens':<24} {len(sel):>3} {inline_ms:>10.1f} "
            f"{first_ms:>10.1f} {first_ms / inline_ms:>6.2f} {inline_cpu:>10.1f} "
            f"{first_cpu:>10.1f} {len(finals):>4}/{len(sel):<4} "
            f"{med([f[0] for f in finals]):>14.2f} {med([f[1] for f in finals]):>11.2f} "
            f"{within:>3}/{len(finals):<3}"
        )
    verdicts = {r["state"] for r in rows}
    print(f"\nreading states of the first answers: {sorted(verdicts)}")
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
