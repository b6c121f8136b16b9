"""The suite's one polling helper, for tests that drive real processes (worker, Redis, web
server, vLLM): wait for a condition another process brings about, failing early when that
process died. Where a test owns the clock it moves the data instead (the sweeper's test ages
its rows)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T],
    timeout: float,
    step: float = 0.05,
    *,
    alive: Callable[[], object] | None = None,
    what: str | Callable[[], str] = "",
) -> T:
    """Return ``predicate()``'s first true value; fail the test after ``timeout`` seconds, or
    as soon as ``alive()`` turns false (the process that should bring it about exited).
    ``what``: said in the failure (a callable is read then, e.g. a log's tail)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if alive is not None and not alive():
            raise AssertionError(f"exited before it happened: {_say(what)}")
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s: {_say(what)}")
        time.sleep(step)


def _say(what: str | Callable[[], str]) -> str:
    return what() if callable(what) else what
