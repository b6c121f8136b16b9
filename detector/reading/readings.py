"""The readings a check may be read with, by name: each turns a text's token ids into a
``ModelReading`` per text (``read(docs, temperature=..., top_p=...)``), the per-token
expected and observed scores the weighted test weighs.

- ``torch-f32``: the model in torch, float32 (``detector.reading.model.ModelAssist``, the
  reference);
- ``ort-f32`` / ``ort-int8``: the same forward pass through ONNX Runtime, float32 or int8
  (``detector.reading.ort.OrtAssist``);
- ``early-exit-<k>``: the first ``k`` decoder layers, the final norm and the head (torch,
  ``detector.reading.model.EarlyExitAssist``);
- ``ngram``: no model, a trigram model of the tokenizer's vocabulary counted from the human
  text the n-gram tables are built from (``detector.reading.ngram``).

Every one is a function of the text alone, never of the key, so the weighted test's null
holds for each: they differ in the power they buy and the CPU they cost, measured side by
side by ``benchmarks/bench_readings.py`` (docs/benchmarks-power.md, "Readings judged by
what they buy"), where ``DEFAULT_READING`` is chosen.
"""

from __future__ import annotations

import functools
import re
from typing import Any

READINGS = ("torch-f32", "ort-f32", "ort-int8", "early-exit-<k>", "ngram")
# The best power per CPU-second that reaches the targets (docs/benchmarks-power.md).
DEFAULT_READING = "ort-f32"
_EARLY = re.compile(r"early-exit-([1-9][0-9]*)")


def check_reading(name: str) -> str:
    """``name`` when it names a reading, else ``ValueError`` listing them."""
    if name in READINGS or _EARLY.fullmatch(name):
        return name
    raise ValueError(f"unknown reading {name!r}; expected one of {', '.join(READINGS)}")


def needs_model(name: str) -> bool:
    """Whether the reading ``name`` loads the tokenizer's model (all but ``ngram``)."""
    return check_reading(name) != "ngram"


@functools.lru_cache(maxsize=8)
def load_reading(name: str, model_dir: str | None = None, tokenizer: str | None = None) -> Any:
    """The reading ``name``, loaded once per process: of the model in ``model_dir`` (every
    reading but ``ngram``), or of ``tokenizer``'s vocabulary (``ngram``; ``None``: the
    embedded default's)."""
    check_reading(name)
    if name == "ngram":
        from detector.reading.ngram import load_ngram_reading

        return load_ngram_reading(tokenizer)
    if model_dir is None:
        raise ValueError(f"the reading {name!r} needs a model directory")
    if name == "torch-f32":
        from detector.reading.model import load_assist

        return load_assist(model_dir)
    if name.startswith("ort-"):
        from detector.reading.ort import load_ort_assist

        return load_ort_assist(model_dir, "float32" if name == "ort-f32" else "int8")
    from detector.reading.model import EarlyExitAssist

    match = _EARLY.fullmatch(name)
    assert match is not None
    return EarlyExitAssist(model_dir, layers=int(match.group(1)))
