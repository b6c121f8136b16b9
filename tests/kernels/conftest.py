"""Fixtures of the kernel tests: seeded generator, interpreter child, CUDA skip."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest
import torch

from tests.kernels import _interpreter

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)  # 3x faster than 2 threads on the shared 2-core CI machines


@pytest.fixture
def gen() -> torch.Generator:
    return torch.Generator().manual_seed(1234)


@pytest.fixture(scope="session")
def interpret() -> Iterator[Callable[..., Any]]:
    """``interpret("kernels.x", "fn", *args, **kwargs)``: the call, run under TRITON_INTERPRET=1."""
    pool = ProcessPoolExecutor(
        max_workers=1,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_interpreter.init_child,
    )

    def run(module: str, name: str, *args: Any, **kwargs: Any) -> Any:
        return pool.submit(_interpreter.call, module, name, args, kwargs).result(timeout=300)

    yield run
    pool.shutdown(wait=True, cancel_futures=True)
