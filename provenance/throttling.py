"""Per-user rate limits: every scope a request counts against, checked and recorded in one
atomic step.

DRF's ``SimpleRateThrottle`` keeps a sliding window (the request times of the last period)
as one cache value it reads, then writes: two Redis round trips per scope, about 1.2 ms of
a check's request each, and two processes reading the same history at once could both pass
the last place. Here the window is a Redis sorted set per (scope, caller) and one Lua script
checks every scope of the request and records it in all of them only when all allow it (a
refused request uses no place): one round trip, atomic across processes. The limits, the
sliding window and the 429 with Retry-After are DRF's (``PROVENANCE_USER_THROTTLE``,
``PROVENANCE_DETECT_THROTTLE``). Without Redis (tests, the cache's failover while Redis is
down) the same window is kept as DRF keeps it, in the cache's process memory.
"""

from __future__ import annotations

import threading
from typing import Any

from django.core.cache import cache as default_cache
from rest_framework.request import Request
from rest_framework.throttling import UserRateThrottle

from provenance.lib.identity import client_scope

# (cache key, requests allowed, period in seconds) of one scope for one caller.
Window = tuple[str, int, int]
READS = ("GET", "HEAD", "OPTIONS")
_local_lock = threading.Lock()


def sliding_window_in_memory(cache: Any, windows: list[Window], now: float) -> float | None:
    """The windows kept as DRF keeps them (a list of request times per key, newest first);
    None when every window allows the request (then it is recorded in each), else the
    seconds until the fullest one frees a place. A lock makes it atomic within a process:
    that is all a per-process cache can offer."""
    with _local_lock:
        histories = []
        wait = None
        for key, limit, duration in windows:
            history = [t for t in cache.get(key, []) if t > now - duration]
            histories.append(history)
            if len(history) >= limit:
                free = (history[-1] + duration - now) if history else float(duration)
                wait = max(wait or 0.0, free)
        if wait is not None:
            return wait
        for (key, _, duration), history in zip(windows, histories, strict=True):
            cache.set(key, [now, *history], duration)
        return None


class RateThrottle(UserRateThrottle):
    """DRF's per-user throttle over the request's ``scopes`` at once (see the module)."""

    scope = "user"

    def scopes(self, request: Request) -> tuple[str, ...]:
        return ("user",)

    def get_ident(self, request: Request) -> str:
        """A caller without an account: its scope (``provenance.lib.identity``), as every
        other counter names it."""
        return client_scope(request)

    def allow_request(self, request: Request, view: Any) -> bool:
        user = request.user
        ident: Any = user.pk if user and user.is_authenticated else None
        ident = ident if ident is not None else self.get_ident(request)
        windows: list[Window] = []
        for scope in self.scopes(request):
            limit, duration = self.parse_rate(self.THROTTLE_RATES.get(scope))
            if limit is not None and duration is not None:
                key = self.cache_format % {"scope": scope, "ident": ident}
                windows.append((key, limit, duration))
        if not windows:
            return True
        self.wait_s = sliding_window(windows, self.timer())
        return self.wait_s is None

    def wait(self) -> float | None:
        return self.wait_s


def sliding_window(windows: list[Window], now: float) -> float | None:
    """``sliding_window_in_memory``'s answer, from Redis in one atomic script when the
    cache is the Redis one (``provenance.cache.FailoverRedisCache``)."""
    counted = getattr(default_cache, "sliding_window", None)
    if counted is not None:
        result: float | None = counted(windows, now)
        return result
    return sliding_window_in_memory(default_cache, windows, now)


def window_count(key: str, period: int, now: float) -> int:
    """How many requests ``key``'s window holds within the last ``period`` s (a read: it
    records nothing), from Redis when the cache is the Redis one."""
    counted = getattr(default_cache, "window_count", None)
    if counted is not None:
        return int(counted(key, period, now))
    return sum(1 for t in default_cache.get(key, []) if t > now - period)


class UserThrottle(RateThrottle):
    """The general per-user rate, every API request (``DEFAULT_THROTTLE_CLASSES``)."""


class DetectionThrottle(RateThrottle):
    """Per-user rate of submissions to the detector (an oracle for forging and scrubbing);
    reads of results are limited only by the general per-user rate. The paste form applies
    it alone."""

    scope = "detect"

    def scopes(self, request: Request) -> tuple[str, ...]:
        return () if request.method in READS else ("detect",)


class UserAndDetectionThrottle(RateThrottle):
    """The API's detection routes: the general rate and, for submissions, the detection
    rate, in one step."""

    def scopes(self, request: Request) -> tuple[str, ...]:
        return ("user",) if request.method in READS else ("user", "detect")
