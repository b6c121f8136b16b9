"""CPU cost of the audit worker's detector work, piece by piece, without the web stack.

On bench_web's audit texts (windows of 40-200 words, half watermarked, one key), CPU seconds
of this process (steadier than wall time on a shared machine), best of three, for:

1. ``detect_text`` per text: bench_web's in-process baseline;
2. tokenize + ``detect_batch`` + ``combine``: the verdict alone;
3. the same with ``localize_family`` in place of ``combine``: the verdict with span
   localization, one text at a time;
4. the same with every text's first scan window computed in one batched pass
   (``detector.evidence.localize.first_windows``), as ``provenance/scoring/service.score_texts``
   does;
5. the same plus the character offsets of the texts in which a span was found, taken from
   the encoding kept from the one tokenization.

Run: ``python benchmarks/bench_audit_path.py [--texts N]``.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_web import _texts  # noqa: E402
from detector.core.config import KeyConfig  # noqa: E402
from detector.decision.decide import decide_many  # noqa: E402
from detector.decision.family import (
    family_verdict,
    localize_family,  # noqa: E402
)
from detector.decision.text import detect_text
from detector.evidence.detection import Document, detect_batch
from detector.evidence.localize import first_windows  # noqa: E402
from detector.text.tokenizers import load_tokenizer, offsets_of  # noqa: E402

KEY = 0x5EED_0F_BE_4C_11_AB


def cpu_seconds(fn: Callable[[], object], repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=2000)
    args = parser.parse_args()
    _, texts = _texts(KEY, args.texts)
    tok = load_tokenizer("default")
    # As the registry builds it: repeats searched over the whole text.
    config = KeyConfig(key=KEY, deduplicate_contexts_max_history=None)

    def documents() -> list[Document]:
        return [Document(tok.encode(text), [config]) for text in texts]

    def in_process() -> None:
        for text in texts:
            detect_text(text, tok, [config])

    def verdict() -> None:
        for found in detect_batch(documents()):
            family_verdict(found, names=["k"])

    def localized() -> None:  # one text at a time
        for found in detect_batch(documents()):
            localize_family(found, [config], names=["k"])

    def localized_batched() -> None:  # as score_texts: first scan windows in one pass
        found = detect_batch(documents())
        windows = first_windows([f[0] for f in found], [config] * len(found))
        for f, w in zip(found, windows, strict=True):
            localize_family(f, [config], names=["k"], first_windows=[w])

    def localized_with_offsets() -> None:  # as score_texts: offsets from the kept encoding
        encoded = [tok.encode_lazy(text) for text in texts]
        docs = [Document(ids, [config]) for ids, _ in encoded]
        found = detect_batch(docs)
        windows = first_windows([f[0] for f in found], [config] * len(found))
        for (_, encoding), f, w in zip(encoded, found, windows, strict=True):
            _, locs = localize_family(f, [config], names=["k"], first_windows=[w])
            if any(loc.spans for loc in locs):
                offsets_of(encoding)

    def decided() -> None:  # score_texts: the one decision, batched, offsets where spans
        encoded = [tok.encode_lazy(text) for text in texts]
        decide_many(
            [[Document(ids, [config])] for ids, _ in encoded],
            offsets=[[functools.partial(offsets_of, enc)] for _, enc in encoded],
        )

    runs = [
        ("detect_text per text (bench_web's in-process)", in_process),
        ("tokenize + detect_batch + combine", verdict),
        ("tokenize + detect_batch + localize_family", localized),
        ("  the first scan windows batched (score_texts)", localized_batched),
        ("  + offsets for the texts with a span", localized_with_offsets),
        ("decide_many (score_texts's one decision)", decided),
    ]
    print(f"{len(texts):,} audit texts, one key, one core; CPU seconds, best of 3")
    base = None
    for name, fn in runs:
        seconds = cpu_seconds(fn)
        base = base or seconds
        print(f"{name:48s} {seconds:7.2f} s  ({seconds / base:.2f}x the first)", flush=True)


if __name__ == "__main__":
    main()
