"""Triton import guard, backend choice and launch heuristics shared by every kernel module.

Everything here imports on a machine without Triton: ``HAS_TRITON`` says whether the real
``triton`` is present, and ``triton.jit`` degrades to a no-op decorator so the kernel modules
still define their (unlaunchable) kernels.

Backend rule, one place for all ops (``backend=`` argument of every launcher):
- ``"auto"`` (default): the Triton kernel for CUDA tensors when Triton is present, the
  pure-torch reference otherwise (CPU tensors always take the reference).
- ``"triton"``: force the kernel. On CPU tensors this needs Triton's interpreter, i.e.
  ``TRITON_INTERPRET=1`` set *before* ``triton`` was first imported in the process.
- ``"torch"``: force the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numba
import torch

try:  # Triton is optional: CPU-only installs run the references.
    import triton
    import triton.language as tl

    HAS_TRITON = True
except ImportError:  # pragma: no cover - exercised only where Triton is absent
    HAS_TRITON = False

    class _TritonStub:
        """Just enough of ``triton`` for the kernel modules to define their functions."""

        @staticmethod
        def jit(fn: Any = None, **_: Any) -> Any:
            return fn if fn is not None else (lambda f: f)

        @staticmethod
        def cdiv(a: int, b: int) -> int:
            return -(-a // b)

    triton = _TritonStub()  # type: ignore[assignment]
    tl = None  # type: ignore[assignment]


def njit_cached(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """``numba.njit`` (nogil, no bounds checks) cached on disk, next to the module or in the
    user's cache directory. Without any writable cache location (a read-only install and no
    home) Numba refuses ``cache=True`` at import time: then compile at every start instead."""

    def wrap(fn: Callable[..., Any]) -> Any:
        flags = {"nogil": True, "boundscheck": False, **options}
        try:
            return numba.njit(cache=True, **flags)(fn)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            return numba.njit(cache=False, **flags)(fn)

    return wrap


Backend = Literal["auto", "triton", "torch"]
BACKENDS = ("auto", "triton", "torch")
UINT32_MASK = 0xFFFFFFFF


def interpreter_on() -> bool:
    """True when Triton's interpreter is active (CPU tensors can be launched on)."""
    # Triton's own reading of TRITON_INTERPRET (its knobs), not a second parser here.
    return HAS_TRITON and bool(triton.knobs.runtime.interpret)


def use_kernel(tensor: torch.Tensor, backend: str) -> bool:
    """Decide kernel (True) or reference (False) for an op whose data lives on ``tensor``."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "torch":
        return False
    if backend == "auto":
        return HAS_TRITON and tensor.is_cuda
    if not HAS_TRITON:
        raise RuntimeError("backend='triton' needs the triton package, which is not installed")
    if not tensor.is_cuda and not interpreter_on():
        raise RuntimeError(
            "backend='triton' on CPU tensors needs TRITON_INTERPRET=1 set before triton is imported"
        )
    return True


def sm_count(device: torch.device) -> int:
    """Streaming multiprocessors of a CUDA device (a nominal 8 under the CPU interpreter)."""
    if device.type != "cuda":
        return 8
    return torch.cuda.get_device_properties(device).multi_processor_count


def vocab_splits(batch: int, vocab: int, block: int, device: torch.device) -> int:
    """How many programs share one row of the sampler.

    One program per row leaves most SMs idle at small batch (B=8 on 132 SMs); splitting the
    vocabulary into S contiguous ranges gives B*S programs, each keeping a running
    (max, argmax), and a [B, S] partial buffer: extra memory O(B*S), never O(B*V). Aim at
    about four programs per SM, with at least 8 tiles of work per program so that the
    per-program context-state Philox stays amortized.
    """
    tiles = triton.cdiv(vocab, block)
    want = triton.cdiv(4 * sm_count(device), max(batch, 1))
    return max(1, min(want, tiles // 8 if tiles >= 16 else 1, 64))


def sample_block(vocab: int) -> int:
    """Vocabulary tile of the sampler: 1024 tokens (256 Philox calls) per iteration."""
    return 1024 if vocab >= 1024 else max(16, 1 << (vocab - 1).bit_length())


def check_keys(keys: torch.Tensor, rows: int, name: str = "keys") -> torch.Tensor:
    """Validate int64 ``[rows]`` 64-bit key patterns (a key >= 2**63 stored as key - 2**64)."""
    if not isinstance(keys, torch.Tensor) or keys.dtype != torch.int64:
        raise ValueError(f"{name} must be an int64 tensor holding each key's 64-bit pattern")
    if keys.shape != (rows,):
        raise ValueError(f"{name} must have shape [{rows}], got {list(keys.shape)}")
    return keys
