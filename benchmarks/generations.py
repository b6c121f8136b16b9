"""Generations from the real generator for the benchmarks that test detection on model text:
SmolLM2-135M-Instruct on vLLM (CPU) with the project's watermark logits processor, under the
fixed benchmark key (``benchmarks.bench_generate.KEY``).

Generating is slow on a CPU (tens of tokens per second), so every benchmark caches what it
generated under ``$PROVENANCE_DATA_DIR/<benchmark>/`` and later runs only detect. Only one
vLLM engine may run on this machine at a time: ``vllm_engine(lock=True)`` holds
``/tmp/provenance-vllm.lock`` (the same lock ``flock /tmp/provenance-vllm.lock <command>``
takes) for as long as the engine lives, so a benchmark that generates cell by cell releases
it between cells.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

VLLM_LOCK = Path("/tmp/provenance-vllm.lock")


def cache_dir(benchmark: str) -> Path:
    """``$PROVENANCE_DATA_DIR/<benchmark>``, created."""
    from detector.paths import data_dir

    path = data_dir() / benchmark
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def vllm_lock() -> Iterator[None]:
    """Hold the machine-wide vLLM lock (blocks while another engine holds it)."""
    with VLLM_LOCK.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def vllm_engine(lock: bool = True) -> Iterator[Any]:
    """A ``VLLMBackend`` with the benchmark key as its default, closed on exit; with ``lock``,
    the vLLM lock is held from before the engine starts until after it stopped. Pass
    ``lock=False`` when the caller already runs under ``flock`` (taking it twice would wait
    forever)."""
    from benchmarks.bench_generate import _backend, _key_file

    with vllm_lock() if lock else nullcontext():
        backend = _backend("vllm", _key_file())
        try:
            yield backend
        finally:
            backend.close()


def fingerprint(spec: dict[str, Any]) -> str:
    """A short digest of what a cached cell was generated from (prompts, sampling, lengths)."""
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def cached_cell(
    path: Path,
    spec: dict[str, Any],
    make: Callable[[Any], dict[str, Any]],
    engine: Callable[[], AbstractContextManager[Any]] = vllm_engine,
) -> dict[str, Any]:
    """The cell cached at ``path`` when it was made from ``spec``; otherwise start ``engine``
    (by default a locked vLLM engine), ``make(backend)``, and store the result with the spec's
    fingerprint and the seconds it took."""
    tag = fingerprint(spec)
    if path.is_file():
        cached = json.loads(path.read_text())
        if cached.get("fingerprint") == tag:
            return cached
    t0 = time.perf_counter()
    with engine() as backend:
        data = make(backend)
    data |= {"fingerprint": tag, "spec": spec, "seconds": time.perf_counter() - t0}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)
    return data
