"""The rate limits' sliding windows (provenance.throttling): in Redis, one atomic script per
request for all its scopes; in process memory without Redis."""

from __future__ import annotations

import threading

import pytest
from django.core.cache.backends.locmem import LocMemCache

from provenance import throttling
from provenance.cache import FailoverRedisCache


@pytest.fixture
def redis_cache(redis_server, monkeypatch):
    """The API's cache pointed at a real Redis, as under make run; emptied before and after."""
    made: list[FailoverRedisCache] = []

    def make() -> FailoverRedisCache:  # one per thread, as Django's cache handler gives
        made.append(FailoverRedisCache(redis_server.url, {}))
        return made[-1]

    cache = make()
    cache.clear()
    monkeypatch.setattr(throttling, "default_cache", cache)
    yield make
    cache.clear()


def test_a_window_allows_its_limit_then_says_when_a_place_frees(redis_cache):
    cache = redis_cache()
    window = [("throttle_user_1", 3, 60)]
    assert [cache.sliding_window(window, 100.0 + i) for i in range(3)] == [None] * 3
    assert cache.sliding_window(window, 110.0) == pytest.approx(50.0)  # the first at 100 + 60
    assert cache.sliding_window(window, 160.5) is None  # the first left the window


def test_a_request_refused_by_one_scope_takes_no_place_in_the_others(redis_cache):
    cache = redis_cache()
    user, detect = ("throttle_user_1", 5, 60), ("throttle_detect_1", 1, 60)
    assert cache.sliding_window([user, detect], 0.0) is None
    assert cache.sliding_window([user, detect], 1.0) == pytest.approx(59.0)
    for t in range(2, 6):  # four more reads fill the general window: the refusal took none
        assert cache.sliding_window([user], float(t)) is None
    assert cache.sliding_window([user], 6.0) is not None


def test_two_processes_share_one_count_and_cannot_both_take_the_last_place(redis_cache):
    window = [("throttle_detect_7", 10, 60)]
    caches = [redis_cache() for _ in range(8)]  # separate clients, as separate processes
    start = threading.Barrier(8)
    allowed: list[bool] = []

    def submit(cache: FailoverRedisCache) -> None:
        start.wait()
        for _ in range(5):
            allowed.append(cache.sliding_window(window, 1.0) is None)

    threads = [threading.Thread(target=submit, args=(cache,)) for cache in caches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert allowed.count(True) == 10 and len(allowed) == 40


def test_with_redis_down_the_window_is_counted_in_the_process():
    cache = FailoverRedisCache("redis://127.0.0.1:9/0", {})  # nothing listens on port 9
    window = [("throttle_user_1", 2, 60)]
    got = [cache.sliding_window(window, 10.0 + i) for i in range(3)]
    assert got[:2] == [None, None] and got[2] == pytest.approx(60.0 - 2.0)


def test_the_in_memory_window_matches_the_redis_one():
    cache = LocMemCache("throttle-test", {})
    user, detect = ("throttle_user_1", 5, 60), ("throttle_detect_1", 1, 60)
    assert throttling.sliding_window_in_memory(cache, [user, detect], 0.0) is None
    assert throttling.sliding_window_in_memory(cache, [user, detect], 1.0) == pytest.approx(59.0)
    assert throttling.sliding_window_in_memory(cache, [detect], 60.5) is None


def test_the_api_answers_429_with_retry_after_from_redis(
    redis_cache, api_for, alice_key, monkeypatch
):
    from rest_framework.throttling import UserRateThrottle

    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", {"user": "100/min", "detect": "2/min"})
    alice = api_for("alice")
    codes = [alice.post("/detect", {"text": f"text {i}"}, format="json") for i in range(3)]
    assert all(c.status_code != 429 for c in codes[:2]) and codes[2].status_code == 429
    assert 55 <= int(codes[2]["Retry-After"]) <= 60
    assert alice.get("/api/v1/checks").status_code == 200  # reads: the general rate only
    assert api_for("bob").post("/detect", {"text": "bob"}, format="json").status_code != 429
