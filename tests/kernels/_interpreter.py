"""Runs kernel launchers in a child Python whose Triton runs in interpreter mode.

Triton reads TRITON_INTERPRET when ``triton`` is first imported and when each kernel is
decorated, and other test directories (vLLM, the generator) import triton normally in the
same pytest process. So the interpreter lives in one spawned child for the whole session:
its initializer sets the variable before anything imports triton, and the tests ship CPU
tensors to it and compare the kernel's answers with the references in the parent.
This module must not import torch or triton at import time (the child imports it first).
"""

from __future__ import annotations

import importlib
import os
from typing import Any


def init_child() -> None:
    os.environ["TRITON_INTERPRET"] = "1"
    os.environ["OMP_NUM_THREADS"] = "1"


def call(module: str, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``module.name(*args, **kwargs)`` with ``backend="triton"`` where the launcher takes it.

    ``generator_seed`` in kwargs becomes a seeded CPU ``torch.Generator`` (generators do
    not cross process boundaries).
    """
    import torch

    torch.set_num_threads(1)
    if "generator_seed" in kwargs:
        kwargs["generator"] = torch.Generator().manual_seed(kwargs.pop("generator_seed"))
    return getattr(importlib.import_module(module), name)(*args, **kwargs)


def guarded_prf_words(width: int, n: int = 300) -> None:
    """Run ``prf_words_kernel`` on contexts that end exactly at an unreadable page.

    A load past the contexts (e.g. for lanes past ``n`` in the last program) faults at once,
    so the process dies instead of silently reading whatever follows the tensor.
    """
    import ctypes
    import mmap

    import numpy as np
    import torch

    from tests.kernels.prf_words import prf_words_kernel

    page = mmap.PAGESIZE
    nbytes = n * width * 8
    size = -(-nbytes // page) * page
    buf = mmap.mmap(-1, size + page, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    guard = np.frombuffer(buf, dtype=np.uint8)
    libc = ctypes.CDLL(None)
    addr = ctypes.c_void_p(guard.ctypes.data + size)
    if libc.mprotect(addr, ctypes.c_size_t(page), 0) != 0:  # PROT_NONE on the last page
        raise OSError(ctypes.get_errno(), "mprotect failed")
    contexts = np.frombuffer(buf, dtype=np.int64, count=n * width, offset=size - nbytes)
    contexts = contexts.reshape(n, width)
    contexts[:] = np.arange(n * width).reshape(n, width) % 1000
    ctx = torch.from_numpy(contexts)
    words = prf_words_kernel(torch.arange(1, n + 1), ctx, torch.arange(n, dtype=torch.int64))
    assert words.shape == (n,)
