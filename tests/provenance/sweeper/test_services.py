"""The sweeper's rules (provenance.sweeper.services): a dead worker's checks are queued again
at once, a backlog in the broker is not taken for lost, an emptied broker is. Runs on SQLite
and, with PROVENANCE_TEST_DB=postgresql, on PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
import redis
from django.utils import timezone

from provenance.checks.models import Check
from provenance.checks.services import check_create, claims
from provenance.heartbeats import services as workers
from provenance.heartbeats.models import Worker
from provenance.metrics.models import Tally
from provenance.metrics.services import SWEEPER_DEAD_WORKERS, SWEEPER_REQUEUED
from provenance.runner.redis_server import RedisServer
from provenance.sweeper.services import checks_sweep


def _pending(cast, text: str) -> Check:
    return check_create(user=cast["alice"], text=text)


def _queued_ids(server: RedisServer) -> str:
    return b"".join(redis.Redis.from_url(server.url).lrange("celery", 0, -1)).decode()


@pytest.mark.django_db(transaction=True)
def test_a_silent_workers_checks_are_queued_again_at_the_next_sweep(
    quiet_redis, cast, alice_key, human_text
):
    check = _pending(cast, human_text)
    silent, _ = workers.worker_start("silent@host")
    claims.checks_claim([check.id], "task-of-the-dead")
    Worker.objects.filter(id=silent.id).update(beat_at=timezone.now() - timedelta(seconds=60))
    redis.Redis.from_url(quiet_redis.url).delete("celery")

    found = checks_sweep(pending_after=10, dead_after=10)

    assert found["dead_workers"] == 1 and found["stuck"] == found["queued"] == 1
    check.refresh_from_db()
    assert check.status == "pending" and check.worker_id is None and check.queued_at
    assert str(check.id) in _queued_ids(quiet_redis)
    assert checks_sweep(pending_after=10, dead_after=10)["stuck"] == 0  # queued, waiting
    # Counted for the operator's /metrics, in the database whichever host swept.
    tallies = dict(Tally.objects.values_list("name", "value"))
    assert tallies == {SWEEPER_REQUEUED: 1, SWEEPER_DEAD_WORKERS: 1}


@pytest.mark.django_db(transaction=True)
def test_a_backlog_is_not_taken_for_lost_but_an_empty_queue_is(
    quiet_redis, cast, alice_key, human_text
):
    client = redis.Redis.from_url(quiet_redis.url)
    client.delete("celery")
    checks = [_pending(cast, f"{human_text} {i}") for i in range(3)]
    assert client.llen("celery") == 3  # queued on commit, no worker: a backlog
    long_ago = timezone.now() - timedelta(seconds=3600)
    Check.objects.filter(id__in=[c.id for c in checks]).update(queued_at=long_ago)

    assert checks_sweep(pending_after=10)["stuck"] == 0  # waiting behind the queue

    client.delete("celery")  # Redis lost its data: nothing waits, nobody holds them
    found = checks_sweep(pending_after=10)
    assert found["stuck"] == found["queued"] == 3 and client.llen("celery") == 3
