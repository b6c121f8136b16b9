"""Per-token scores ``s = -log(1 - u)``: numpy on the CPU, ``kernels.score_tokens`` on CUDA.

The GPU path is taken only when a CUDA device is visible (checked without importing torch on
machines that have no NVIDIA device node) and ``PROVENANCE_DEVICE`` is not ``cpu``.
"""

from __future__ import annotations

import functools
import os

import numpy as np
from numpy.typing import NDArray

from detector import prf


def token_scores(key: int, contexts: NDArray[np.int64], ids: NDArray[np.int64]) -> NDArray:
    """Scores of tokens ``ids`` after ``contexts`` (``[n, w]``) under ``key``; float64."""
    u = prf.uniform(prf.uint32(key, contexts, ids))
    return -np.log1p(-u.astype(np.float64))


@functools.lru_cache(maxsize=1)
def cuda_available() -> bool:
    """True when detection should run on the GPU scoring kernel."""
    choice = os.environ.get("PROVENANCE_DEVICE", "auto").lower()
    if choice == "cpu" or (choice == "auto" and not os.path.exists("/dev/nvidiactl")):
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())
