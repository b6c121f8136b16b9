"""Detector throughput on 1 MB of English prose with the SmolLM2 tokenizer, one core.

Prints, from one run on the same text: tokenization-only tokens/s, PRF+score-only tokens/s,
end-to-end ``detect_text`` tokens/s and the ratio of end-to-end time to tokenization time,
then the same ratio in CPU seconds (steadier than wall time on a shared machine).
Targets: PRF+score >= 5 M tokens/s; end-to-end <= 1.10x tokenization.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.corpus import english_prose  # noqa: E402
from detector.core.contexts import build_contexts  # noqa: E402
from detector.core.scoring import token_scores  # noqa: E402
from detector.decision.text import detect_text
from detector.text.tokenizers import load_tokenizer  # noqa: E402

KEY = 0x5EED_0F_BE_4C_11_AA
REPEATS = 5


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
    # Interleave the three measurements so that machine noise hits them alike, and keep CPU
    # time beside wall time: on a shared machine other processes stretch the wall clock of a
    # single-threaded run, not its CPU seconds, so the CPU ratio is the steadier figure there.
    runs: dict[str, Callable[[], object]] = {
        "tok": lambda: tok.encode(text),
        "prf": lambda: token_scores(KEY, contexts, ids),
        "e2e": lambda: detect_text(text, tok, [KEY]),
        "all": lambda: detect_text(text, tok, [KEY], common_ngrams=False),
    }
    wall = dict.fromkeys(runs, float("inf"))
    cpu = dict.fromkeys(runs, float("inf"))
    for _ in range(REPEATS):
        for name, fn in runs.items():
            w, c = timed(fn)
            wall[name], cpu[name] = min(wall[name], w), min(cpu[name], c)
    t_tok, t_prf, t_e2e = wall["tok"], wall["prf"], wall["e2e"]
    print(f"text: {len(text.encode()):,} bytes, {n:,} SmolLM2 tokens; best of {REPEATS}, one core")
    print(f"tokenization only     {n / t_tok / 1e6:8.3f} M tokens/s  ({t_tok * 1e3:7.1f} ms)")
    print(
        f"PRF + score only      {n / t_prf / 1e6:8.3f} M tokens/s  ({t_prf * 1e3:7.1f} ms)"
        "   target >= 5"
    )
    print(f"detect_text end-to-end{n / t_e2e / 1e6:8.3f} M tokens/s  ({t_e2e * 1e3:7.1f} ms)")
    print(f"end-to-end / tokenization = {t_e2e / t_tok:.3f}x   target <= 1.10x")
    print(
        f"  without the n-gram table (common_ngrams=False): {wall['all'] / t_tok:.3f}x"
        f" ({wall['all'] * 1e3:.1f} ms)"
    )
    print(
        f"CPU time: tokenization {cpu['tok'] * 1e3:.1f} ms, PRF + score {cpu['prf'] * 1e3:.1f} ms,"
        f" end-to-end {cpu['e2e'] * 1e3:.1f} ms; end-to-end / tokenization ="
        f" {cpu['e2e'] / cpu['tok']:.3f}x; without the table {cpu['all'] / cpu['tok']:.3f}x"
    )


if __name__ == "__main__":
    main()
