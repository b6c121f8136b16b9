"""Which reading a product reads with: one name, one loader.

The weighted test stays valid for any weights computed from the text alone, so a reading is
chosen by what it buys (power per CPU second, docs/benchmarks-power.md), not by how close it
comes to the model's. ``READINGS`` names those the product may be set to (of
``detector.reading.readings``, which also holds the readings measured and not adopted: early
exit, n-gram); ``load_reading`` loads one, once per process. A worker with a CUDA device
reads with torch on it whatever is named.
"""

from __future__ import annotations

from typing import Any

# name -> (runtime, variant). The first is the default: ONNX Runtime float32 reads at the
# torch reading's power (the same decisions on the code cell) at half its CPU.
READINGS: dict[str, tuple[str, str]] = {
    "ort-f32": ("onnxruntime", "float32"),
    "torch-f32": ("torch", "float32"),
    "ort-int8": ("onnxruntime", "int8"),
}
DEFAULT_READING = next(iter(READINGS))


class ReadingUnavailable(RuntimeError):
    """The named reading cannot be loaded here (its runtime is missing, or the model
    directory cannot serve it); the message says why."""


def load_reading(model_dir: str, name: str = DEFAULT_READING) -> Any:
    """The reading ``name`` of the model in ``model_dir`` (a ``ModelAssist``: ``read(ids)``),
    loaded once per process through ``detector.reading.readings``'s loader; torch on a CUDA
    device whatever ``name`` says."""
    from detector.core.scoring import cuda_available
    from detector.reading import readings
    from detector.reading.model import ModelDirError
    from detector.reading.ort import OrtUnavailable

    if name not in READINGS:
        raise ValueError(f"unknown reading {name!r}; expected one of {list(READINGS)}")
    try:
        return readings.load_reading("torch-f32" if cuda_available() else name, model_dir)
    except (ModelDirError, OrtUnavailable) as exc:
        raise ReadingUnavailable(str(exc)) from exc
