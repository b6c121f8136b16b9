"""Who holds a check, and what counts as lost: claims, the heartbeat, the sweeper's rules, and
the writes that must stay atomic when requests race (quota, Idempotency-Key). Runs on
SQLite and, with PROVENANCE_TEST_DB=postgresql, on PostgreSQL (row locks for real)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
import redis
from django.db import connection
from django.utils import timezone

from provenance.audits.services import audit_submit
from provenance.checks.models import Audit, Check, DetectionLog, Hypothesis, Worker
from provenance.checks.scoring import prepare_keys, score_text
from provenance.checks.services import check_create, check_score, results_store
from provenance.errors import ProblemError
from provenance.heartbeats import services as workers
from provenance.runner.redis_server import RedisServer
from provenance.sweeper.services import checks_sweep
from tests.provenance.conftest import point_celery_at


@pytest.fixture(scope="module")
def quiet_redis(tmp_path_factory):
    """A Redis no worker consumes from: what the sweeper queues stays there to be seen."""
    from provenance.celery import app

    previous = app.conf.broker_url
    server = RedisServer(tmp_path_factory.mktemp("recovery-redis")).start()
    point_celery_at(server.url)
    yield server
    server.stop()
    point_celery_at(previous)


def _queued_ids(server: RedisServer) -> str:
    return b"".join(redis.Redis.from_url(server.url).lrange("celery", 0, -1)).decode()


def _pending(cast, text: str) -> Check:
    return check_create(user=cast["alice"], text=text)


def test_a_held_check_cannot_be_claimed_by_another_task(cast, alice_key, human_text):
    check = _pending(cast, human_text)
    assert [c.id for c in workers.checks_claim([check.id], "task-a")] == [check.id]
    assert workers.checks_claim([check.id], "task-b") == []
    # The same message delivered again (its worker process died) takes it back.
    assert [c.id for c in workers.checks_claim([check.id], "task-a")] == [check.id]


def test_a_task_whose_claim_was_taken_over_stores_nothing(cast, alice_key, human_text):
    check = _pending(cast, human_text)
    workers.checks_claim([check.id], "stalled")
    result = score_text(human_text, prepare_keys([alice_key]), threshold=0.01)
    # The sweeper took the stalled task's worker for dead: released, claimed by another.
    Check.objects.filter(id=check.id).update(status="pending", claim="")
    check_score(check.id, claim="new-holder")
    finished = Check.objects.get(id=check.id).finished_at
    assert results_store([(check, result)], "stalled") == 0  # the stalled task wakes up
    assert Hypothesis.objects.filter(check_run=check).count() == 1
    assert Check.objects.get(id=check.id).finished_at == finished


def test_a_worker_started_under_a_live_name_replaces_the_old_one(db):
    old, _ = workers.worker_start("w1@host")
    new, replaced = workers.worker_start("w1@host")
    other, _ = workers.worker_start("w2@host")
    assert replaced == 1
    assert Worker.objects.get(id=old.id).dead_at is not None
    assert Worker.objects.get(id=new.id).dead_at is None
    assert Worker.objects.get(id=other.id).dead_at is None


def test_a_heartbeat_keeps_a_worker_alive_and_brings_back_a_purged_row(db):
    worker, _ = workers.worker_start("beat@host")
    Worker.objects.filter(id=worker.id).update(beat_at=timezone.now() - timedelta(seconds=60))
    workers.worker_beat(worker)
    assert workers.workers_reap(dead_after=10) == 0
    Worker.objects.filter(id=worker.id).delete()
    workers.worker_beat(worker)
    assert Worker.objects.filter(id=worker.id, dead_at__isnull=True).exists()


@pytest.mark.django_db(transaction=True)
def test_a_silent_workers_checks_are_queued_again_at_the_next_sweep(
    quiet_redis, cast, alice_key, human_text
):
    check = _pending(cast, human_text)
    silent, _ = workers.worker_start("silent@host")
    workers.checks_claim([check.id], "task-of-the-dead")
    Worker.objects.filter(id=silent.id).update(beat_at=timezone.now() - timedelta(seconds=60))
    redis.Redis.from_url(quiet_redis.url).delete("celery")

    found = checks_sweep(pending_after=10, dead_after=10)

    assert found["dead_workers"] == 1 and found["stuck"] == found["queued"] == 1
    check.refresh_from_db()
    assert check.status == "pending" and check.worker_id is None and check.queued_at
    assert str(check.id) in _queued_ids(quiet_redis)
    assert checks_sweep(pending_after=10, dead_after=10)["stuck"] == 0  # queued, waiting


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


@pytest.mark.django_db(transaction=True)
def test_racing_claims_split_the_checks_without_overlap(quiet_redis, cast, alice_key, human_text):
    ids = [_pending(cast, f"{human_text} {i}").id for i in range(60)]
    held: dict[str, list] = {}
    start = threading.Barrier(3)

    def claim(name: str) -> None:
        start.wait()
        try:
            held[name] = [c.id for c in workers.checks_claim(ids, name)]
        finally:
            connection.close()

    threads = [threading.Thread(target=claim, args=(f"task-{i}",)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    claimed = [cid for got in held.values() for cid in got]
    assert sorted(claimed) == sorted(ids)  # every check held by exactly one task


@pytest.mark.django_db(transaction=True)
def test_the_daily_quota_holds_when_requests_race(
    quiet_redis, cast, alice_key, human_text, settings
):
    settings.PROVENANCE_DAILY_QUOTA = 5
    outcomes: list[str] = []
    start = threading.Barrier(8)

    def submit(i: int) -> None:
        start.wait()
        try:
            check_create(user=cast["alice"], text=f"{human_text} {i}")
            outcomes.append("stored")
        except ProblemError as exc:
            outcomes.append(str(exc.status_code))
        finally:
            connection.close()

    threads = [threading.Thread(target=submit, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["429"] * 3 + ["stored"] * 5
    assert Check.objects.count() == 5
    assert sum(DetectionLog.objects.values_list("num_texts", flat=True)) == 5


@pytest.mark.django_db(transaction=True)
def test_one_idempotency_key_sent_twice_at_once_stores_one_audit(
    quiet_redis, cast, alice_key, human_text
):
    texts = [{"client_id": str(i), "text": f"{human_text} {i}"} for i in range(20)]
    got: list = []
    start = threading.Barrier(4)

    def submit() -> None:
        start.wait()
        try:
            audit, created = audit_submit(user=cast["alice"], texts=texts, idempotency_key="k1")
            got.append((audit.id, created))
        finally:
            connection.close()

    threads = [threading.Thread(target=submit) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({audit_id for audit_id, _ in got}) == 1 and len(got) == 4
    assert sum(created for _, created in got) == 1
    assert Audit.objects.count() == 1 and Check.objects.count() == 20
    assert sum(DetectionLog.objects.values_list("num_texts", flat=True)) == 20
