"""A request waiting for a queued check sleeps on Redis until the worker's push, and reads
the check then; a push that never comes costs one slice, not the verdict."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from provenance.checks import wake
from provenance.checks.models import Check, Status
from provenance.checks.selectors import check_finished
from provenance.checks.services import check_create, check_score


@pytest.fixture
def redis_cache(settings, redis_server):
    settings.CACHES = {
        "default": {"BACKEND": "provenance.cache.FailoverRedisCache", "LOCATION": redis_server.url}
    }
    from django.core.cache import caches

    caches["default"].clear()
    yield caches["default"]
    caches["default"].clear()


@pytest.fixture(autouse=True)
def no_worker(published_tasks):
    """The scoring messages stay in this process: a worker the session started elsewhere
    must not score these checks (and wake or not) before the test's own ``check_score``."""
    return published_tasks


@pytest.fixture
def slices(monkeypatch) -> list[bool | None]:
    """What each of the waiting request's slices ended with (``wake.wait``): True a push,
    False a timeout, None no Redis."""
    ended: list[bool | None] = []
    real_wait = wake.wait

    def counted(check_id, seconds):
        ended.append(real_wait(check_id, seconds))
        return ended[-1]

    monkeypatch.setattr(wake, "wait", counted)
    return ended


def test_a_wake_is_kept_for_the_request_that_waits_and_taken_once(redis_cache):
    wake.finished(["a", "b"])
    assert wake.wait("a", 5) is True
    start = time.monotonic()
    assert wake.wait("a", 0.1) is False  # taken: the next wait times out
    assert 0.05 <= time.monotonic() - start < 1
    assert wake.wait("b", 5) is True


def test_a_wait_is_at_most_one_slice_and_none_without_redis(redis_cache, settings, monkeypatch):
    client = wake._client()
    timeouts: list[float] = []
    real_blpop = client.blpop

    def blpop(keys, timeout):
        timeouts.append(timeout)
        return real_blpop(keys, timeout=timeout)

    with monkeypatch.context() as patched:
        patched.setattr(client, "blpop", blpop)
        patched.setattr(wake, "_client", lambda: client)
        start = time.monotonic()
        assert wake.wait("never", 30) is False
    assert timeouts == [wake.SLICE_S]  # one slice asked of Redis, not the 30 s
    assert time.monotonic() - start < wake.SLICE_S + 0.3  # and Redis kept to it
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    assert wake.wait("never", 1) is None
    wake.finished(["never"])  # nothing to push to: nothing happens


@pytest.mark.django_db(transaction=True)
def test_the_waiting_request_wakes_on_the_workers_push_without_reading_the_check(
    redis_cache, cast, alice_key, wm_text, slices
):
    """The push is sent after the result's commit: the caller reads the check once, then.
    The request reads only after a slice that ended without a push (a slow worker)."""
    check = check_create(user=cast["alice"], text=wm_text)
    threading.Timer(0.3, check_score, args=[check.id]).start()  # the worker, a moment later
    with CaptureQueriesContext(connection) as queries:
        assert check_finished(check.id, within=10) is True
    reads = [q for q in queries.captured_queries if "checks_check" in q["sql"]]
    # One read after each slice that ended without a push; none before the wait, none after
    # a wake (under load the worker can outlast a slice, then the read finds it done).
    assert len(reads) == slices.count(False) and slices.count(True) <= 1
    assert Check.objects.get(id=check.id).status == Status.DONE


@pytest.mark.django_db(transaction=True)
def test_a_push_sent_before_the_request_waits_ends_the_wait_at_once(
    redis_cache, cast, alice_key, wm_text, slices
):
    check = check_create(user=cast["alice"], text=wm_text)
    check_score(check.id)  # finished and pushed before anyone waits
    with CaptureQueriesContext(connection) as queries:
        assert check_finished(check.id, within=10) is True
    # The first slice took the push kept for it: not a slice's timeout, then a read.
    assert slices == [True]
    assert [q for q in queries.captured_queries if "checks_check" in q["sql"]] == []


@pytest.mark.django_db(transaction=True)
def test_a_check_finished_without_a_push_is_found_after_a_slice(redis_cache, cast, alice_key):
    check = check_create(user=cast["alice"], text="a text to check")
    Check.objects.filter(id=check.id).update(status=Status.FAILED)  # e.g. by the sweeper
    assert check_finished(check.id, within=10) is True
    other = check_create(user=cast["alice"], text="another text")
    threading.Timer(0.1, lambda: Check.objects.filter(id=other.id).update(status="done")).start()
    start = time.monotonic()
    assert check_finished(other.id, within=10) is True
    assert time.monotonic() - start < 5  # not the whole wait: a slice, then the read
