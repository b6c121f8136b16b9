"""Who holds a check: claims, a claim taken over, racing claims, the release of a dead
worker's checks. Runs on SQLite and, with PROVENANCE_TEST_DB=postgresql, on PostgreSQL (row
locks for real)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from provenance.checks.models import Check, Hypothesis
from provenance.checks.services import check_create, check_score, claims, results_store
from provenance.heartbeats import services as workers
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


def test_the_checks_of_a_dead_worker_are_released_and_no_others(
    monkeypatch, cast, alice_key, human_text
):
    monkeypatch.setattr(workers, "_current", None)  # this process's worker, as each start sets it
    dead, _ = workers.worker_start("dead@host")
    lost = _pending(cast, f"{human_text} lost")
    claims.checks_claim([lost.id], "task-of-the-dead")
    alive, _ = workers.worker_start("alive@host")
    kept = _pending(cast, f"{human_text} kept")
    claims.checks_claim([kept.id], "task-of-the-living")
    workers.worker_stop(dead)
    assert claims.checks_release_dead() == [lost.id]
    assert Check.objects.get(id=lost.id).status == "pending"
    assert Check.objects.get(id=kept.id).claim == "task-of-the-living"


def _compiled(store: dict) -> list:
    return [key for key, template in store.items() if template is not None]


def test_the_claim_is_one_compiled_update_that_returns_what_it_took(cast, alice_key, human_text):
    """Where the database returns an UPDATE's rows (PostgreSQL, SQLite 3.35+), the claim is
    one statement compiled once per thread (its parameters matched the ORM's): the checks
    come back with the fields asked for, converted as the ORM would; a later claim through it
    still takes only a free check, and a check this claim holds already comes back again."""
    from provenance.lib import precompiled

    precompiled.clear()
    first, second = _pending(cast, human_text), _pending(cast, human_text)
    fields = ("id", "text", "key_ids", "threshold")
    [taken] = claims.checks_claim([str(first.id)], "task-a", fields)
    assert _compiled(precompiled._local.returning) == [("checks_claim_update", 1, (), True, fields)]
    assert (taken.id, taken.text, taken.key_ids, taken.threshold) == (
        first.id,
        first.text,
        first.key_ids,
        first.threshold,
    )
    assert taken.get_deferred_fields() >= {"status", "claim", "token_data"}
    assert _compiled(precompiled._local.by_key) == []  # no read after it
    assert [c.id for c in claims.checks_claim([second.id], "task-a")] == [second.id]
    assert claims.checks_claim([first.id], "task-b") == []
    assert [c.id for c in claims.checks_claim([first.id], "task-a")] == [first.id]
    assert Check.objects.get(id=first.id).claim == "task-a"
    both = claims.checks_claim([second.id, first.id], "task-a")
    assert [c.id for c in both] == sorted([first.id, second.id])


def test_without_returning_the_claim_is_a_compiled_update_then_a_compiled_read(
    cast, alice_key, human_text, monkeypatch
):
    """A database that cannot return an UPDATE's rows: the UPDATE and the read of what is
    held, each compiled once per thread, take only what is free."""
    from provenance.lib import precompiled

    precompiled.clear()
    monkeypatch.setattr(connection.features, "can_return_columns_from_insert", False)
    first, second = _pending(cast, human_text), _pending(cast, human_text)
    assert [c.id for c in claims.checks_claim([first.id], "task-a")] == [first.id]
    assert [key[0] for key in _compiled(precompiled._local.updates)] == ["checks_claim_update"]
    assert [key[0] for key in _compiled(precompiled._local.by_key)] == ["checks_claim"]
    assert [c.id for c in claims.checks_claim([second.id], "task-a")] == [second.id]
    assert claims.checks_claim([first.id], "task-b") == []
    assert Check.objects.get(id=first.id).claim == "task-a"


def test_a_workers_claim_runs_compiled_and_names_the_worker(
    cast, alice_key, human_text, monkeypatch
):
    """Claimed inside a worker (its row in the SET): compiled too, and the row names it."""
    from provenance.lib import precompiled

    precompiled.clear()
    monkeypatch.setattr(workers, "_current", None)  # restored after the test
    worker, _ = workers.worker_start("compiled-claim@host")
    check = _pending(cast, human_text)
    assert [c.id for c in claims.checks_claim([check.id], "task-w")] == [check.id]
    compiled = _compiled(precompiled._local.returning)
    assert [key[3] for key in compiled] == [False]  # the worker is not None
    assert Check.objects.get(id=check.id).worker_id == worker.id
