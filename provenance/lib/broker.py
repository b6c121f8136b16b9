"""kombu's Redis transport with one client per connection pool.

kombu makes a new ``redis.Redis`` for every command it sends outside the consuming
connection: each task a worker takes (the unacknowledged index written, then cleared by the
acknowledgement) and each message a web process publishes. A ``redis.Redis`` holds no
connection of its own (each command takes one from the pool), but making one copies the
library's table of response callbacks: about as much CPU as the command's round trip. This
transport makes it once per pool (a new pool, after a reconnection, gets a new one);
everything else is kombu's. ``CELERY_BROKER_TRANSPORT`` names it for ``redis://`` and
``rediss://`` brokers (the settings); ``provenance.cache`` does the same for the cache.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis


class Channel(redis.Channel):
    _kept: tuple[Any, Any] | None = None  # (pool, its client)

    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:  # the consuming connection's client, which kombu keeps already
            return super()._create_client(asynchronous=True)  # type: ignore[misc]
        pool, kept = self.pool, self._kept
        if kept is None or kept[0] is not pool:
            kept = self._kept = (pool, super()._create_client())  # type: ignore[misc]
        return kept[1]


class Transport(redis.Transport):
    Channel = Channel
