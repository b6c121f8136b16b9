"""Per-append cost of the streaming e-process against re-running the fixed-length test.

One token appended at a time to streams of 2,000 SmolLM2 tokens of English prose, one core:
``EvidenceStream.extend([t])`` (O(1) per token) against ``detect_ids`` over the whole prefix
after every token (what the playground's meter did: O(n) per token). Prints microseconds per
append at several stream lengths, side by side, and the ratio; plus 1, 4 and 16 keys; plus the
HTTP API's path, which loads the stored state, appends and stores it again on every request
(``from_bytes`` + ``extend`` + ``to_bytes``: O(n) bytes per append, up to the 20,000-token cap).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.corpus import english_prose  # noqa: E402
from detector.evidence.detection import detect_ids  # noqa: E402
from detector.evidence.stream import EvidenceStream  # noqa: E402
from detector.text.tokenizers import load_tokenizer  # noqa: E402

KEY = 0x5EED_0F_BE_4C_11_AA
LENGTH = 2000
MARKS = (100, 500, 1000, 2000)
CAP = 20_000  # PROVENANCE_STREAM_MAX_TOKENS's default


def stream_costs(ids, keys) -> dict[int, float]:
    """Median microseconds of the 50 appends that bring the stream to each mark."""
    stream = EvidenceStream(keys)
    times = []
    for t in ids:
        start = time.perf_counter()
        stream.extend([int(t)])
        times.append(time.perf_counter() - start)
    return {m: statistics.median(times[m - 50 : m]) * 1e6 for m in MARKS}


def rerun_costs(ids) -> dict[int, float]:
    out = {}
    for m in MARKS:
        times = []
        for j in range(m - 20, m):
            start = time.perf_counter()
            detect_ids(ids[: j + 1], KEY)
            times.append(time.perf_counter() - start)
        out[m] = statistics.median(times) * 1e6
    return out


def persisted_costs(ids, marks) -> dict[int, float]:
    """Median microseconds of 20 appends through the stored state at each mark (the API)."""
    out = {}
    for m in marks:
        stream = EvidenceStream([KEY])
        stream.extend(ids[: m - 20])
        state, times = stream.to_bytes(), []
        for t in ids[m - 20 : m]:
            start = time.perf_counter()
            loaded = EvidenceStream.from_bytes(state, [KEY])
            loaded.extend([int(t)])
            state = loaded.to_bytes()
            times.append(time.perf_counter() - start)
        out[m] = statistics.median(times) * 1e6
    return out


def main() -> None:
    long_ids = load_tokenizer("default").encode(english_prose(400_000))
    assert len(long_ids) >= CAP
    ids = long_ids[:LENGTH]
    stream_costs(ids, [KEY])  # warm up imports and caches
    one = stream_costs(ids, [KEY])
    rerun = rerun_costs(ids)
    print(f"{LENGTH} SmolLM2 tokens of prose, one token per append, one core")
    print("tokens so far | e-process us/append | fixed test re-run us/append | ratio")
    for m in MARKS:
        print(f"{m:13d} | {one[m]:19.1f} | {rerun[m]:27.1f} | {rerun[m] / one[m]:5.1f}x")
    for k in (4, 16):
        many = stream_costs(ids, [KEY + i for i in range(k)])
        print(f"{k:2d} keys: e-process {many[LENGTH]:.1f} us/append at {LENGTH} tokens")
    stored = persisted_costs(long_ids, (*MARKS, CAP))
    print("through the stored state (the API's path), us/append: ", end="")
    print(", ".join(f"{v:.0f} at {m}" for m, v in stored.items()))


if __name__ == "__main__":
    main()
