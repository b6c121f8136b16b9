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
