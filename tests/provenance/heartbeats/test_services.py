"""Who holds a check, and which workers are alive: claims, racing claims, the heartbeat. Runs
on SQLite and, with PROVENANCE_TEST_DB=postgresql, on PostgreSQL (row locks for real)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from provenance.checks.models import Check, Hypothesis
from provenance.checks.services import check_create, check_score, claims, results_store
from provenance.heartbeats import services as workers
from provenance.heartbeats.models import Worker
from provenance.keys.selectors import prepare_keys
from provenance.scoring.service import score_text


def _pending(cast, text: str) -> Check:
    return check_create(user=cast["alice"], text=text)


def test_a_held_check_cannot_be_claimed_by_another_task(cast, alice_key, human_text):
    check = _pending(cast, human_text)
    assert [c.id for c in claims.checks_claim([check.id], "task-a")] == [check.id]
    assert claims.checks_claim([check.id], "task-b") == []
    # The same message delivered again (its worker process died) takes it back.
    assert [c.id for c in claims.checks_claim([check.id], "task-a")] == [check.id]


def test_a_task_whose_claim_was_taken_over_stores_nothing(cast, alice_key, human_text):
    check = _pending(cast, human_text)
    claims.checks_claim([check.id], "stalled")
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
def test_racing_claims_split_the_checks_without_overlap(quiet_redis, cast, alice_key, human_text):
    ids = [_pending(cast, f"{human_text} {i}").id for i in range(60)]
    held: dict[str, list] = {}
    start = threading.Barrier(3)

    def claim(name: str) -> None:
        start.wait()
        try:
            held[name] = [c.id for c in claims.checks_claim(ids, name)]
        finally:
            connection.close()

    threads = [threading.Thread(target=claim, args=(f"task-{i}",)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    claimed = [cid for got in held.values() for cid in got]
    assert sorted(claimed) == sorted(ids)  # every check held by exactly one task
