"""The rate limits' cache: Redis while it answers, this process's memory while it does not."""

from __future__ import annotations

import logging

import pytest

from provenance.cache import FailoverRedisCache


def test_with_redis_down_every_call_falls_back_to_process_memory(caplog):
    cache = FailoverRedisCache("redis://127.0.0.1:9/0", {})  # nothing listens on port 9
    with caplog.at_level(logging.WARNING, logger="provenance.cache"):
        cache.set("a", 1)
        assert cache.get("a") == 1
        assert cache.add("a", 2) is False and cache.add("b", 2) is True
        cache.delete("a")
        assert cache.get("a") is None and cache.get("b") == 2
        cache.set_many({"c": 1, "d": 2})
        assert cache.get_many(["c", "d", "e"]) == {"c": 1, "d": 2}
        assert cache.incr("c") == 2
        cache.clear()
        assert cache.get("b") is None
    assert "Redis unreachable" in caplog.text


def test_a_short_socket_timeout_is_the_default_and_an_option_overrides_it():
    assert FailoverRedisCache("redis://127.0.0.1:9/0", {})._options["socket_timeout"] == 0.5
    cache = FailoverRedisCache("redis://127.0.0.1:9/0", {"OPTIONS": {"socket_timeout": 3}})
    assert cache._options["socket_timeout"] == 3
    assert cache._options["socket_connect_timeout"] == 0.5


def test_with_redis_up_values_live_in_redis_shared_by_clients(redis_server):
    first = FailoverRedisCache(redis_server.url, {})
    second = FailoverRedisCache(redis_server.url, {})
    first.clear()
    first.set("shared", "value", 60)
    assert second.get("shared") == "value"  # another client (process) sees it
    assert second._local.get("shared") is None  # not the process fallback
    first.clear()
    assert second.get("shared") is None


def test_the_sliding_window_works_through_redis(redis_server):
    cache = FailoverRedisCache(redis_server.url, {})
    cache.clear()
    window = [("cache_test_window", 1, 30)]
    assert cache.sliding_window(window, 5.0) is None
    assert cache.sliding_window(window, 6.0) == pytest.approx(29.0)
    cache.clear()


def test_a_counter_is_held_and_released_in_redis_and_expires_from_its_making(redis_server):
    from provenance.cache import counter_hold, counter_release

    cache = FailoverRedisCache(redis_server.url, {})
    other = FailoverRedisCache(redis_server.url, {})
    cache.clear()
    assert counter_hold(cache, "held", 60) == 1
    assert counter_hold(other, "held", 60) == 2  # counted across clients (processes)
    client = cache._cache.get_client("held")
    name = cache.make_and_validate_key("held")
    assert 0 < client.ttl(name) <= 60
    client.expire(name, 30)
    counter_hold(cache, "held", 60)
    assert client.ttl(name) <= 30  # the expiry runs from the counter's making, not renewed
    counter_release(cache, "held")
    assert cache.get("held") == 2
    cache.delete("held")
    counter_release(cache, "held")  # expired meanwhile: not brought back below zero
    assert cache.get("held") is None
    assert cache._cache.get_client("x") is cache._cache.get_client("y")  # one client, reused
    cache.clear()


def test_a_counter_falls_back_to_process_memory_with_redis_down():
    from django.core.cache.backends.locmem import LocMemCache

    from provenance.cache import counter_hold, counter_release

    for cache in (FailoverRedisCache("redis://127.0.0.1:9/0", {}), LocMemCache("c", {})):
        assert counter_hold(cache, "held", 60) == 1
        assert counter_hold(cache, "held", 60) == 2
        counter_release(cache, "held")
        assert counter_hold(cache, "held", 60) == 2
