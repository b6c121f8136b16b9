"""Storing what scoring produced: keys in the check's order, results stored once by the task
that still holds the checks, a failure never overwriting a result."""

from __future__ import annotations

import uuid

import pytest
from django.conf import settings
from django.utils import timezone

from provenance.checks.models import Check, Status
from provenance.checks.services import check_create
from provenance.checks.services.claims import checks_claim
from provenance.checks.services.results import (
    RESULT_FIELDS,
    check_fail,
    hypothesis_values,
    keys_for_scoring,
    result_values,
    results_store,
)
from provenance.keys.selectors import prepare_keys
from provenance.keys.services import key_create
from provenance.scoring.service import ScoringError, score_text


@pytest.fixture
def two_keys(cast, alice_key, tokenizer_row):
    other, _ = key_create(name="second", team=cast["acme"], tokenizer=tokenizer_row)
    return [alice_key, other]


def _scored(text, keys):
    return score_text(text, prepare_keys(keys), threshold=settings.PROVENANCE_THRESHOLD)


def test_keys_come_in_the_checks_order_and_a_deleted_one_fails(two_keys):
    first, second = two_keys
    assert keys_for_scoring([str(second.id), str(first.id)]) == [second, first]
    with pytest.raises(ScoringError, match="1 key"):
        keys_for_scoring([str(first.id), str(uuid.uuid4())])


def test_the_values_stored_are_the_scorings(two_keys, wm_text):
    result = _scored(wm_text, two_keys)
    values = result_values(result, timezone.now())
    assert set(values) == set(RESULT_FIELDS)
    assert values["status"] == Status.DONE and values["num_hypotheses"] == 2
    assert values["best_key"] == two_keys[0] and values["is_watermarked"] is True
    assert values["log10_p"] == result.log10_p
    best = result.hypotheses[result.best]
    row = hypothesis_values(Check(id=uuid.uuid4()), best)
    assert row["key"] == two_keys[0].id and row["key_name"] == "acme-main"
    assert row["log10_p"] == best.detection.log10_p


def test_results_are_stored_only_under_the_claim_that_holds_the_check(cast, two_keys, wm_text):
    check = check_create(user=cast["alice"], text=wm_text)
    assert [c.id for c in checks_claim([check.id], "task-1")] == [check.id]
    result = _scored(wm_text, two_keys)
    assert results_store([(check, result)], claim="task-2") == 0  # not its holder
    assert Check.objects.get(id=check.id).status == Status.RUNNING
    assert results_store([(check, result)], claim="task-1") == 1
    stored = Check.objects.get(id=check.id)
    assert stored.status == Status.DONE and stored.hypotheses.count() == 2
    assert stored.best_key_id == two_keys[0].id
    assert results_store([(check, result)], claim="task-1") == 0  # a done check is held by none
    assert stored.hypotheses.count() == 2


def test_the_lock_on_held_checks_runs_compiled_and_still_finds_only_the_held(
    cast, two_keys, wm_text
):
    """The read that locks the held checks is compiled once per thread (its parameters matched
    the ORM's); through it, a check held under another claim is still left alone."""
    from provenance.lib import precompiled

    precompiled.clear()
    mine, theirs = (check_create(user=cast["alice"], text=wm_text) for _ in range(2))
    checks_claim([mine.id], "task-1")
    checks_claim([theirs.id], "task-2")
    result = _scored(wm_text, two_keys)
    assert results_store([(mine, result)], claim="task-1") == 1
    compiled = [key for key, template in precompiled._local.by_key.items() if template]
    assert ("results_store_lock", 1) in compiled
    assert results_store([(theirs, result)], claim="task-1") == 0  # compiled, not its holder
    assert Check.objects.get(id=theirs.id).status == Status.RUNNING
    assert results_store([(theirs, result)], claim="task-2") == 1


def test_a_failure_marks_an_unfinished_check_and_never_a_done_one(cast, alice_key):
    pending = check_create(user=cast["alice"], text="one text")
    done = check_create(user=cast["alice"], text="another text")
    Check.objects.filter(id=done.id).update(status=Status.DONE)
    check_fail(pending.id, "tokenizer changed")
    check_fail(done.id, "late failure")
    failed = Check.objects.get(id=pending.id)
    assert failed.status == Status.FAILED and failed.failure_reason == "tokenizer changed"
    assert failed.finished_at is not None
    assert Check.objects.get(id=done.id).status == Status.DONE
