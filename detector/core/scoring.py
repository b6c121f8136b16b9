"""Per-token scores ``s = -log(1 - u)``: numpy (or, for long inputs, the compiled PRF of
``detector.core.compiled_prf``) on the CPU, ``kernels.score_tokens`` on CUDA.

The GPU path is taken only when a CUDA device is visible (checked without importing torch on
machines that have no NVIDIA device node) and the device choice (a caller's, else
``PROVENANCE_DEVICE`` through ``detector.defaults``) is not ``cpu``. Both paths
give the same float64 scores (pinned by tests through the kernel's torch reference on CPU).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from detector import defaults
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
    (``detector.core.compiled_prf.uniforms``: the same words, ~2x faster, and no gathered copy
    of the masked rows); short ones numpy's (``detector.core.prf``). Both give the same
    float32 uniforms bit for bit, so the same scores.
    """
    if np.shape(ids)[0] >= COMPILED_FROM:
        from detector.core import compiled_prf

        rows = np.ones(np.shape(ids)[0], np.bool_) if mask is None else mask
        u = compiled_prf.uniforms(prf.check_key(key), contexts, ids, rows)
    else:
        if mask is not None:
            contexts, ids = contexts[mask], ids[mask]
        u = prf.uniform(prf.uint32(key, contexts, ids))
    return -np.log1p(-u.astype(np.float64))


def spread_scores(
    config: KeyConfig, ids: NDArray[np.int64], mask: NDArray[np.bool_]
) -> NDArray[np.float64]:
    """``config_scores`` of the rows of ``ids`` where ``mask`` holds, at their positions
    (``[n]``, 0.0 elsewhere), the contexts taken at ``config.context_width``. Long inputs
    compute each PRF word from the ids in place (``compiled_prf.spread_uniforms``) and the scores
    over it in place: no context array, gather, scatter or temporary (each fresh array right
    after a tokenization costs its page faults); the same floats as the masked
    ``config_scores``."""
    if ids.shape[0] < COMPILED_FROM:
        from detector.core.contexts import build_contexts

        out = np.zeros(ids.shape[0], np.float64)
        if mask.any():
            out[mask] = config_scores(config, build_contexts(ids, config.context_width), ids, mask)
        return out
    from detector.core import compiled_prf

    def scores(key: int) -> NDArray[np.float64]:
        s = compiled_prf.spread_uniforms(prf.check_key(key), ids, config.context_width, mask)
        np.negative(s, out=s)  # -log1p(-u), as token_scores; off the mask -log1p(-0.0) = +0.0
        np.log1p(s, out=s)
        return np.negative(s, out=s)

    if config.algorithm == "gumbel":
        return scores(config.key)
    a = scores(prf.derive_key(config.key, b"key_a"))
    b = scores(prf.derive_key(config.key, b"key_b"))
    a *= 1.0 - config.alpha  # (1 - alpha) * a + alpha * b, as config_scores
    b *= config.alpha
    a += b
    return a


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


@functools.lru_cache(maxsize=4)
def cuda_available(choice: str | None = None) -> bool:
    """True when detection should run on the GPU scoring kernel: ``choice`` (``cpu`` or
    ``auto``), else the library's default (``detector.defaults.device``)."""
    choice = defaults.device() if choice is None else choice.lower()
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
