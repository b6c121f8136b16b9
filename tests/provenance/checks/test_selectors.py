"""Reads of checks: scoped to the caller's team, deleted rows hidden, waiting bounded."""

from __future__ import annotations

import time

import pytest
from django.http import Http404
from django.utils import timezone

from provenance.accounts.models import Membership
from provenance.checks.models import Check, Status
from provenance.checks.selectors import (
    CHECK_WAITING,
    check_finished,
    check_get,
    checks_for_user,
    may_delete,
    queue_notice,
)
from provenance.checks.services import check_create, check_score


@pytest.fixture
def alice_check(cast, alice_key):
    return check_create(user=cast["alice"], text="a text to check")


def test_a_teams_checks_are_seen_by_its_members_only(cast, alice_check):
    assert list(checks_for_user(cast["bob"])) == [alice_check]
    assert list(checks_for_user(cast["charlie"])) == []
    assert check_get(cast["bob"], alice_check.id) == alice_check
    with pytest.raises(Http404):
        check_get(cast["charlie"], alice_check.id)


def test_a_deleted_check_is_gone_from_every_read(cast, alice_check):
    Check.objects.filter(id=alice_check.id).update(deleted_at=timezone.now())
    assert list(checks_for_user(cast["alice"])) == []
    with pytest.raises(Http404):
        check_get(cast["alice"], alice_check.id)


def test_check_get_leaves_the_token_data_unloaded(cast, alice_check):
    assert "token_data" in check_get(cast["alice"], alice_check.id).get_deferred_fields()


def test_waiting_for_a_check_ends_at_its_deadline_or_when_it_finishes(alice_check):
    start = time.monotonic()
    assert check_finished(alice_check.id, within=0.2) is False
    assert 0.2 <= time.monotonic() - start < 1.0
    Check.objects.filter(id=alice_check.id).update(status=Status.FAILED)
    assert check_finished(alice_check.id, within=5) is True


def test_waiting_ends_as_soon_as_the_check_is_finished(cast, alice_key, wm_text):
    check = check_create(user=cast["alice"], text=wm_text)
    assert check_finished(check.id, within=0.05) is False
    check_score(check.id)
    start = time.monotonic()
    assert check_finished(check.id, within=10) is True
    assert time.monotonic() - start < 1


def test_the_submitter_or_a_team_admin_may_delete(cast, alice_check):
    assert may_delete(cast["alice"], alice_check)
    assert not may_delete(cast["bob"], alice_check)
    Membership.objects.filter(user=cast["bob"]).update(is_admin=True)
    assert may_delete(cast["bob"], alice_check)


def test_a_pending_check_never_queued_says_it_waits(alice_check):
    alice_check.status, alice_check.queued_at = Status.PENDING, None
    assert queue_notice(alice_check) == CHECK_WAITING
    alice_check.queued_at = timezone.now()
    assert queue_notice(alice_check) == ""
    alice_check.status, alice_check.queued_at = Status.DONE, None
    assert queue_notice(alice_check) == ""
