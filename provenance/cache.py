"""The Redis cache behind the rate limits, falling back to per-process memory while Redis is
unreachable: a limit counted per process for a moment beats every request failing (the
broker's outage is survived the same way: checks wait as pending)."""

from __future__ import annotations

import logging
import os
from typing import Any

from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)
_DOWN = (RedisConnectionError, RedisTimeoutError, OSError)

# provenance.throttling's sliding windows, one sorted set of request times per key. KEYS: the
# windows' keys; ARGV: now, a unique member, then (limit, period) per key. Every window is
# checked before any is written: a refused request takes no place. Returns nil (allowed) or
# the seconds until the fullest window frees a place, as a string (Lua numbers would be
# truncated to integers on the way out).
SLIDING_WINDOW_LUA = """
local now = tonumber(ARGV[1])
local wait = nil
for i, key in ipairs(KEYS) do
  local limit = tonumber(ARGV[1 + 2 * i])
  local period = tonumber(ARGV[2 + 2 * i])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - period)
  if redis.call('ZCARD', key) >= limit then
    local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    local free = period
    if oldest[2] then free = tonumber(oldest[2]) + period - now end
    if wait == nil or free > wait then wait = free end
  end
end
if wait ~= nil then return tostring(wait) end
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, now, ARGV[2])
  redis.call('EXPIRE', key, math.ceil(tonumber(ARGV[2 + 2 * i])))
end
return nil
"""


class FailoverRedisCache(RedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        params = dict(params)
        options = {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}
        params["OPTIONS"] = options | dict(params.get("OPTIONS") or {})
        super().__init__(server, params)
        self._local = LocMemCache("provenance-failover", {})
        self._script: Any = None

    def sliding_window(self, windows: list[tuple[str, int, int]], now: float) -> float | None:
        """``provenance.throttling``'s rate check in one round trip (``SLIDING_WINDOW_LUA``);
        while Redis is unreachable, counted in this process like the cache's other calls."""
        from provenance.throttling import sliding_window_in_memory

        keys = [self.make_and_validate_key(key) for key, _, _ in windows]
        args: list[Any] = [repr(now), os.urandom(8).hex()]
        for _, limit, period in windows:
            args += [limit, period]
        try:
            if self._script is None:  # one client (and pool) per cache object: it is per thread
                client = self._cache.get_client(keys[0], write=True)  # type: ignore[attr-defined]
                self._script = client.register_script(SLIDING_WINDOW_LUA)
            wait = self._script(keys=keys, args=args)
        except _DOWN as exc:
            logger.warning(
                "cache: Redis unreachable (%s); counting in this process", type(exc).__name__
            )
            return sliding_window_in_memory(self._local, windows, now)
        return None if wait is None else float(wait)

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

    def incr(self, *args: Any, **kwargs: Any) -> Any:
        return self._either("incr", *args, **kwargs)

    def decr(self, *args: Any, **kwargs: Any) -> Any:
        return self._either("decr", *args, **kwargs)

    def get_many(self, *args: Any, **kwargs: Any) -> Any:
        return self._either("get_many", *args, **kwargs)

    def set_many(self, *args: Any, **kwargs: Any) -> Any:
        return self._either("set_many", *args, **kwargs)

    def clear(self) -> Any:
        return self._either("clear")
