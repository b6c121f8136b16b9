"""Enforcement floors: how much watermark evidence SmolLM2 replies carry at low-entropy settings.

For each sampling setting (the default, then top-k, temperature, top-p and min-p pushed towards
a single candidate), the transformers backend writes one watermarked reply per prompt and
reports what the keyed draw did (``generator.core.DrawRecord``): the share of keyed positions
where more than one token could be drawn, the expected excess score per keyed token
(``E[s] - 1`` at the sampling distribution), the median expected log10 p of a reply, the
median log10 p the detector actually reached (``detect_ids``, the generating key) and the share
of replies detected at p <= 0.01. The gate's default floors (``generator.floors``) are read off
these figures: docs/security.md gives them.

Run: ``python benchmarks/bench_enforcement.py [--prompts 6] [--max-tokens 100]``
(one core; every setting and prompt in one batch).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

KEY = 0x5EED_0F_BE_4C_11_AB_02  # a fixed benchmark key; the figures do not depend on its value
THRESHOLD = 0.01
PROMPTS = (
    "Write a short story about a lighthouse keeper.",
    "Explain how a bicycle stays upright.",
    "Write a letter to a friend about your garden.",
    "Describe a city under the sea.",
    "Give advice to someone learning to cook.",
    "Write a poem about autumn rain.",
    "Explain why the sky is blue.",
    "Tell a fable about a fox and a crow.",
)
SETTINGS: tuple[tuple[str, dict[str, float]], ...] = (
    ("default (temperature 1)", {}),
    ("top_k 1", {"top_k": 1}),
    ("top_k 2", {"top_k": 2}),
    ("top_k 3", {"top_k": 3}),
    ("top_k 5", {"top_k": 5}),
    ("top_k 10", {"top_k": 10}),
    ("temperature 1e-4", {"temperature": 1e-4}),
    ("temperature 0.1", {"temperature": 0.1}),
    ("temperature 0.2", {"temperature": 0.2}),
    ("temperature 0.3", {"temperature": 0.3}),
    ("temperature 0.5", {"temperature": 0.5}),
    ("temperature 0.7", {"temperature": 0.7}),
    ("top_p 1e-9", {"top_p": 1e-9}),
    ("top_p 0.1", {"top_p": 0.1}),
    ("top_p 0.3", {"top_p": 0.3}),
    ("top_p 0.5", {"top_p": 0.5}),
    ("top_p 0.9", {"top_p": 0.9}),
    ("min_p 1.0", {"min_p": 1.0}),
    ("min_p 0.5", {"min_p": 0.5}),
    ("min_p 0.3", {"min_p": 0.3}),
    ("min_p 0.1", {"min_p": 0.1}),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=100)
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)
    from detector.evidence.detection import detect_ids
    from generator.config import KeyStore
    from generator.core import SamplingSettings
    from generator.hf import TransformersBackend
    from generator.types import GenerationRequest

    tmp = tempfile.TemporaryDirectory()  # the backend re-reads the key file on each batch
    path = Path(tmp.name) / "keys.json"
    path.write_text(json.dumps({"bench": {"key": KEY}}))
    backend = TransformersBackend(KeyStore.from_file(path), default_key="bench")
    start = time.monotonic()
    prompts = PROMPTS[: args.prompts]
    requests = [
        GenerationRequest(
            messages=({"role": "user", "content": prompt},),
            max_tokens=args.max_tokens,
            sampling=SamplingSettings(**fields),  # type: ignore[arg-type]
            seed=i,
        )
        for _, fields in SETTINGS
        for i, prompt in enumerate(prompts)
    ]
    # One batch: every row has its own sampling settings, so all settings share each forward.
    generations, states = _generate(backend, requests)
    rows = []
    for s, (label, _) in enumerate(SETTINGS):
        part = range(s * len(prompts), (s + 1) * len(prompts))
        records = [states[i].record for i in part]
        assert all(r is not None for r in records)
        detections = [detect_ids(list(generations[i].token_ids), KEY) for i in part]
        keyed = sum(r.keyed for r in records)  # type: ignore[union-attr]
        row = {
            "setting": label,
            "tokens": statistics.mean(len(generations[i].token_ids) for i in part),
            "choice_share": sum(r.with_choice for r in records) / max(keyed, 1),  # type: ignore[union-attr]
            "excess_per_token": sum(r.excess for r in records) / max(keyed, 1),  # type: ignore[union-attr]
            "expected_log10_p": statistics.median(r.expected_log10_p() for r in records),  # type: ignore[union-attr]
            "detected_log10_p": statistics.median(d.log10_p for d in detections),
            "detected_share": sum(d.log10_p <= math.log10(THRESHOLD) for d in detections)
            / len(detections),
        }
        rows.append(row)
        if not args.json:
            print(
                f"{label:24s} tokens {row['tokens']:6.1f}  choice {row['choice_share']:5.2f}  "
                f"excess/token {row['excess_per_token']:6.3f}  expected log10 p "
                f"{row['expected_log10_p']:7.1f}  detected log10 p {row['detected_log10_p']:7.1f}"
                f"  detected {row['detected_share']:4.2f}"
            )
    seconds = time.monotonic() - start
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"{len(prompts)} prompts x {len(SETTINGS)} settings, one batch, in {seconds:.0f} s")


def _generate(backend, requests):  # type: ignore[no-untyped-def]
    """(generations, their row states): one batch, the states read after the last step."""
    from generator.core import RowState

    states: list[RowState] = []
    original = backend._row

    def capture(request, prompt, output):  # type: ignore[no-untyped-def]
        name, row = original(request, prompt, output)
        assert isinstance(row, RowState), "every request of the benchmark is keyed"
        states.append(row)
        return name, row

    backend._row = capture
    try:
        generations = backend.generate(requests)
    finally:
        backend._row = original
    return generations, states


if __name__ == "__main__":
    main()
