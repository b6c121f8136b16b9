"""Per-token scores ``s = -log(1 - u)``: numpy (or, for long inputs, the compiled PRF of
``detector.core.compiled``) on the CPU, ``kernels.score_tokens`` on CUDA.

The GPU path is taken only when a CUDA device is visible (checked without importing torch on
machines that have no NVIDIA device node) and ``PROVENANCE_DEVICE`` is not ``cpu``. Both paths
give the same float64 scores (pinned by tests through the kernel's torch reference on CPU).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from detector.core import prf
from detector.core.config import KeyConfig, key_int64
from detector.core.contexts import COMPILED_FROM


def token_scores(
    key: int,
    contexts: NDArray[np.int64],
    ids: NDArray[np.int64],
    mask: NDArray[np.bool_] | None = None,
) -> NDArray:
    """Scores of tokens ``ids`` after ``contexts`` (``[n, w]``) under ``key``; float64. With
    ``mask``, only the rows where it holds are scored (``[mask.sum()]``, in row order).

    Long inputs (``COMPILED_FROM`` rows and more) take the compiled PRF
    (``detector.core.compiled.uniforms``: the same words, ~2x faster, and no gathered copy
    of the masked rows); short ones numpy's (``detector.core.prf``). Both give the same
    float32 uniforms bit for bit, so the same scores.
    """
    if np.shape(ids)[0] >= COMPILED_FROM:
        from detector.core import compiled

        rows = np.ones(np.shape(ids)[0], np.bool_) if mask is None else mask
        u = compiled.uniforms(prf.check_key(key), contexts, ids, rows)
    else:
        if mask is not None:
            contexts, ids = contexts[mask], ids[mask]
        u = prf.uniform(prf.uint32(key, contexts, ids))
    return -np.log1p(-u.astype(np.float64))


def config_scores(
    config: KeyConfig,
    contexts: NDArray[np.int64],
    ids: NDArray[np.int64],
    mask: NDArray[np.bool_] | None = None,
) -> NDArray:
    """Scores under a configuration: one key, or the alpha-weighted pair of derived keys
    (``mask``: as in ``token_scores``)."""
    if config.algorithm == "gumbel":
        return token_scores(config.key, contexts, ids, mask)
    a = token_scores(prf.derive_key(config.key, b"key_a"), contexts, ids, mask)
    b = token_scores(prf.derive_key(config.key, b"key_b"), contexts, ids, mask)
    return (1.0 - config.alpha) * a + config.alpha * b


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


def kernel_scores(
    docs: Sequence[NDArray[np.int64]],
    keys: Sequence[int],
    *,
    context_width: int,
    algorithm: str,
    alpha: float,
    device: str = "cuda",
    backend: str = "auto",
) -> list[NDArray[np.float64]]:
    """Scores of every position of every document in one ``kernels.score_tokens`` call."""
    import torch

    from kernels.score_tokens import score_tokens

    lengths = np.array([d.shape[0] for d in docs], np.int64)
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    flat = np.concatenate(list(docs)) if docs else np.zeros(0, np.int64)
    patterns = [key_int64(k) for k in keys]
    out = (
        score_tokens(
            torch.from_numpy(flat.astype(np.int64)).to(device),
            torch.from_numpy(cu).to(device),
            torch.tensor(patterns, dtype=torch.int64, device=device),
            context_width=context_width,
            algorithm=algorithm,
            alpha=alpha,
            backend=backend,  # type: ignore[arg-type]
        )
        .cpu()
        .numpy()
    )
    return np.split(out, cu[1:-1])
