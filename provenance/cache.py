"""The Redis cache behind the rate limits, falling back to per-process memory while Redis is
unreachable: a limit counted per process for a moment beats every request failing (the
broker's outage is survived the same way: checks wait as pending)."""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Any

from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache, RedisCacheClient
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


_INCR_NEW_EXPIRES_LUA = (
    "local n = redis.call('INCR', KEYS[1]) "
    "if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end return n"
)
_DECR_IF_EXISTS_LUA = (
    "if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('DECR', KEYS[1]) end return nil"
)


def counter_hold_generic(cache: Any, key: str, timeout: int) -> int:
    """``counter_hold`` on any Django cache: add (at 0, expiring in ``timeout``), then incr."""
    cache.add(key, 0, timeout=timeout)
    try:
        return int(cache.incr(key))
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=timeout)
        return 1


def counter_hold(cache: Any, key: str, timeout: int) -> int:
    """Add one to a counter of ``cache`` expiring in ``timeout`` s; returns the new count."""
    hold = getattr(cache, "counter_hold", None)
    return (
        int(hold(key, timeout)) if hold is not None else counter_hold_generic(cache, key, timeout)
    )


def counter_release(cache: Any, key: str) -> None:
    """Take back one ``counter_hold``."""
    release = getattr(cache, "counter_release", None)
    if release is not None:
        release(key)
        return
    with contextlib.suppress(ValueError):
        cache.decr(key)


class _OneClientPerPool(RedisCacheClient):
    """Django's client makes a new ``redis.Redis`` for every cache call, and each copies the
    library's table of response callbacks (about 0.1 ms of CPU, the cost of the command's
    round trip itself): one client per connection pool, made once (a client holds no
    connection of its own; each command takes one from the pool)."""

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        pool = self._get_connection_pool(write)  # type: ignore[attr-defined]
        clients: dict[int, Any] = self.__dict__.setdefault("_clients_by_pool", {})
        client = clients.get(id(pool))
        if client is None:
            client = clients[id(pool)] = self._client(connection_pool=pool)  # type: ignore[attr-defined]
        return client


class FailoverRedisCache(RedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        params = dict(params)
        options = {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}
        params["OPTIONS"] = options | dict(params.get("OPTIONS") or {})
        super().__init__(server, params)
        self._class = _OneClientPerPool
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

    def window_count(self, key: str, period: int, now: float) -> int:
        """The requests a ``sliding_window`` key holds within the last ``period`` s (one
        ZCOUNT; from this process's count while Redis is unreachable)."""
        try:
            client = self._cache.get_client(key, write=False)  # type: ignore[attr-defined]
            name = self.make_and_validate_key(key)
            return int(client.zcount(name, f"({now - period!r}", "+inf"))
        except _DOWN:
            return sum(1 for t in self._local.get(key, []) if t > now - period)

    def redis_client(self) -> Any:
        """This thread's Redis client (one per pool), for commands the cache API lacks."""
        return self._cache.get_client(None, write=True)  # type: ignore[attr-defined]

    def counter_hold(self, key: str, timeout: int) -> int:
        """Add one to the counter ``key``, which expires ``timeout`` s after it was made, in
        one round trip; returns the new count (``cache.add`` then ``cache.incr`` take three).
        Django's Redis cache stores integers as they are: ``decr`` and ``get`` read it too."""
        name = self.make_and_validate_key(key)
        try:
            client = self._cache.get_client(name, write=True)  # type: ignore[attr-defined]
            return int(client.eval(_INCR_NEW_EXPIRES_LUA, 1, name, timeout))
        except _DOWN as exc:
            logger.warning(
                "cache: Redis unreachable (%s); counting in this process", type(exc).__name__
            )
            return counter_hold_generic(self._local, key, timeout)

    def counter_release(self, key: str) -> None:
        """Take back one ``counter_hold`` (a counter that expired meanwhile is left alone)."""
        name = self.make_and_validate_key(key)
        try:
            client = self._cache.get_client(name, write=True)  # type: ignore[attr-defined]
            client.eval(_DECR_IF_EXISTS_LUA, 1, name)
        except _DOWN:
            with contextlib.suppress(ValueError):
                self._local.decr(key)

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
