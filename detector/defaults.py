"""The library's own defaults from the environment, for a standalone user (the CLI, a script,
a worker that passes nothing): the only module of ``detector/`` that reads ``os.environ``.
Every other module takes these as parameters and falls back on them.

- ``PROVENANCE_DATA_DIR``: where caches and generated files go (``detector.paths.data_dir``);
  unset, ``<repo>/var``.
- ``PROVENANCE_DEVICE``: ``cpu`` scores with numpy even where a CUDA device is visible;
  ``auto`` (unset) uses one when present (``detector.core.scoring.cuda_available``).
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """``$PROVENANCE_DATA_DIR`` or ``<repo>/var`` (not created here)."""
    return Path(os.environ.get("PROVENANCE_DATA_DIR") or REPO_ROOT / "var")


def device() -> str:
    """``$PROVENANCE_DEVICE`` in lower case: ``cpu``, ``auto`` (unset) or another choice."""
    return os.environ.get("PROVENANCE_DEVICE", "auto").lower()
