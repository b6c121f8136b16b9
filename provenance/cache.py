"""The Redis cache behind the rate limits, falling back to per-process memory while Redis is
unreachable: a limit counted per process for a moment beats every request failing (the
broker's outage is survived the same way: checks wait as pending)."""

from __future__ import annotations

import logging
from typing import Any

from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)
_DOWN = (RedisConnectionError, RedisTimeoutError, OSError)


class FailoverRedisCache(RedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        params = dict(params)
        options = {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}
        params["OPTIONS"] = options | dict(params.get("OPTIONS") or {})
        super().__init__(server, params)
        self._local = LocMemCache("provenance-failover", {})

    def _either(self, name: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return getattr(super(), name)(*args, **kwargs)
        except _DOWN as exc:
            logger.warning(
                "cache: Redis unreachable (%s); counting in this process", type(exc).__name__
            )
            return getattr(self._local, name)(*args, **kwargs)

    def get(self, *args: Any, **kwargs: Any) -> Any:
        return self._either("get", *args, **kwargs)

    def set(self, *args: Any, **kwargs: Any) -> Any:
        return self._either("set", *args, **kwargs)

    def add(self, *args: Any, **kwargs: Any) -> Any:
        return self._either("add", *args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        return self._either("delete", *args, **kwargs)

    def clear(self) -> Any:
        return self._either("clear")
