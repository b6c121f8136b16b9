"""Detector throughput on 1 MB of English prose with the SmolLM2 tokenizer, one core.

Prints, from one run on the same text: tokenization-only tokens/s, PRF+score-only tokens/s,
end-to-end ``detect_text`` tokens/s (tokenization, masks with the shipped n-gram table, scores,
p-values and the product's decision) and the ratio of end-to-end time to tokenization time,
in wall and in CPU seconds (steadier than wall time on a shared machine). Each repeat times
the runs back to back; the ratios quoted are the medians of the repeats' ratios. Also timed:
``detect_text`` on the text already tokenized (the same call, its tokenizer handing back the
encoding made before): everything the product does beyond tokenization, whose share of the
tokenization time (``1 + detection / tokenization``) estimates the ratio with far less noise
than the difference of two long runs on a loaded machine.
Targets: PRF+score >= 8 M tokens/s; end-to-end <= 1.05x tokenization.
"""

from __future__ import annotations

import copy
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.corpus import english_prose  # noqa: E402
from detector.core.contexts import build_contexts  # noqa: E402
from detector.core.scoring import token_scores  # noqa: E402
from detector.decision.text import detect_text  # noqa: E402
from detector.text.tokenizers import load_tokenizer  # noqa: E402

KEY = 0x5EED_0F_BE_4C_11_AA
REPEATS = 9


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    text = english_prose()
    tok = load_tokenizer("default")
    ids = tok.encode(text)
    n = ids.shape[0]
    contexts = build_contexts(ids, 4)
    encoded = tok.encode_lazy(text)
    pretokenized = copy.copy(tok)  # the same tokenizer (and n-gram table), tokenization done
    pretokenized.encode_lazy = lambda _: encoded  # type: ignore[method-assign]
    # Interleave the measurements so that machine noise hits them alike, and keep CPU time
    # beside wall time: on a shared machine other processes stretch the wall clock of a
    # single-threaded run, not its CPU seconds, so the CPU ratio is the steadier figure there.
    runs: dict[str, Callable[[], object]] = {
        "tok": lambda: tok.encode(text),
        "prf": lambda: token_scores(KEY, contexts, ids),
        "e2e": lambda: detect_text(text, tok, [KEY]),
        "all": lambda: detect_text(text, tok, [KEY], common_ngrams=False),
        "det": lambda: detect_text(text, pretokenized, [KEY]),
    }
    detect_text(text, tok, [KEY])  # loads the n-gram table and the compiled passes once
    wall: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(REPEATS):
        for name, fn in runs.items():
            w, c = timed(fn)
            wall[name].append(w)
            cpu[name].append(c)

    def med(values: list[float]) -> float:
        return float(np.median(values))

    def ratio(times: dict[str, list[float]], name: str) -> float:
        return med([a / b for a, b in zip(times[name], times["tok"], strict=True)])

    t_tok, t_prf, t_e2e = med(wall["tok"]), med(wall["prf"]), med(wall["e2e"])
    print(
        f"text: {len(text.encode()):,} bytes, {n:,} SmolLM2 tokens; medians of {REPEATS}, one core"
    )
    print(f"tokenization only     {n / t_tok / 1e6:8.3f} M tokens/s  ({t_tok * 1e3:7.1f} ms)")
    print(
        f"PRF + score only      {n / t_prf / 1e6:8.3f} M tokens/s  ({t_prf * 1e3:7.1f} ms)"
        "   target >= 8"
    )
    print(f"detect_text end-to-end{n / t_e2e / 1e6:8.3f} M tokens/s  ({t_e2e * 1e3:7.1f} ms)")
    print(f"end-to-end / tokenization = {ratio(wall, 'e2e'):.3f}x   target <= 1.05x")
    print(
        f"  without the n-gram table (common_ngrams=False): {ratio(wall, 'all'):.3f}x"
        f" ({med(wall['all']) * 1e3:.1f} ms)"
    )
    share = med(cpu["det"]) / med(cpu["tok"])
    print(
        f"detection beyond tokenization {med(cpu['det']) * 1e3:.1f} ms CPU"
        f" ({med(wall['det']) * 1e3:.1f} ms wall): 1 + detection / tokenization ="
        f" {1 + share:.3f}x (CPU)   target <= 1.05x"
    )
    print(
        f"CPU time: tokenization {med(cpu['tok']) * 1e3:.1f} ms, PRF + score"
        f" {med(cpu['prf']) * 1e3:.1f} ms, end-to-end {med(cpu['e2e']) * 1e3:.1f} ms;"
        f" end-to-end / tokenization = {ratio(cpu, 'e2e'):.3f}x;"
        f" without the table {ratio(cpu, 'all'):.3f}x"
    )


if __name__ == "__main__":
    main()
