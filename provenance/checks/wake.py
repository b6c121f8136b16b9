"""The verdict of a queued check, pushed to the request that waits for it (``?wait=``).

The worker that stores a check's result pushes one item onto a short-lived Redis list named
after the check (``finished``); the waiting request blocks on that list (``wait``) instead of
reading the database over and over: a waiting client costs nothing while it waits. The
database stays the source of truth: the request reads the check after each wake, and after
every ``SLICE_S`` seconds without one (a worker that died, a check failed elsewhere, Redis
unreachable), so a missed push costs at most that delay. Without a Redis cache (per-process
memory) ``wait`` answers None and the caller polls as before.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from django.core.cache import caches

from provenance.cache import FailoverRedisCache

logger = logging.getLogger(__name__)

SLICE_S = 0.4  # under the cache's 0.5 s socket timeout: a blocking pop never outlasts it
KEEP_S = 60  # an item no request took (it was answered already) goes by itself


def _client() -> Any:
    backend = caches["default"]
    return backend.redis_client() if isinstance(backend, FailoverRedisCache) else None


def _key(check_id: Any) -> str:
    return f"provenance:finished:{check_id}"


def finished(check_ids: Iterable[Any]) -> None:
    """Wake the requests waiting for these checks (their results are committed)."""
    try:
        client = _client()
        if client is None:
            return
        pipe = client.pipeline(transaction=False)
        for check_id in check_ids:
            pipe.rpush(_key(check_id), 1).expire(_key(check_id), KEEP_S)
        pipe.execute()
    except Exception as exc:  # redis raises many types; a lost wake costs one slice
        logger.warning("could not wake a waiting request (%s)", type(exc).__name__)


def wait(check_id: Any, seconds: float) -> bool | None:
    """Block up to ``seconds`` (at most ``SLICE_S``) for the check's wake: True when it came,
    False when not, None when there is no Redis to wait on (the caller sleeps instead)."""
    try:
        client = _client()
        if client is None:
            return None
        return client.blpop([_key(check_id)], timeout=max(0.01, min(seconds, SLICE_S))) is not None
    except Exception as exc:  # unreachable: poll as without Redis
        logger.warning("cannot wait on Redis (%s); polling", type(exc).__name__)
        return None
