"""The history's filters (one definition for the page and the API): each filter, the search,
the date range, the submitter for team admins only, and the team's scope."""

from __future__ import annotations

from datetime import datetime, timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone

from provenance.accounts.models import Membership
from provenance.checks.filters import CheckFilter
from provenance.checks.models import Check
from provenance.keys.services import key_create

pytestmark = pytest.mark.django_db


def history_row(user, *, verdict="", key=None, days_ago=0, filename="", client_id="", team=None):
    """A finished single check as the history lists it (no scoring needed to filter)."""
    check = Check.objects.create(
        team=team or user.membership.team,
        submitted_by=user,
        text="a text",
        key_ids=[str(key.id)] if key else [],
        threshold=0.01,
        status="done" if verdict else "pending",
        verdict=verdict,
        best_key=key,
        filename=filename,
        client_id=client_id,
    )
    when = timezone.make_aware(datetime(2026, 11, 20, 12, 0)) - timedelta(days=days_ago)
    Check.objects.filter(id=check.id).update(created_at=when)
    return check


def found(user, **query) -> set:
    history = CheckFilter(query, request=SimpleNamespace(user=user))
    assert history.is_valid(), history.errors
    return set(history.qs.values_list("id", flat=True))


def errors(user, **query) -> dict:
    history = CheckFilter(query, request=SimpleNamespace(user=user))
    assert not history.is_valid()
    return history.errors


@pytest.fixture
def rows(cast, alice_key):
    alice, bob = cast["alice"], cast["bob"]
    return {
        "wm": history_row(alice, verdict="watermarked", key=alice_key, filename="essay-3.docx"),
        "human": history_row(bob, verdict="not_watermarked", key=alice_key, days_ago=5),
        "short": history_row(alice, verdict="inconclusive", days_ago=10, client_id="post-77"),
        "theirs": history_row(cast["charlie"], verdict="watermarked", filename="essay-3.docx"),
    }


def test_without_a_filter_the_team_sees_its_own_checks_only(cast, rows):
    assert found(cast["alice"]) == {rows[name].id for name in ("wm", "human", "short")}
    assert found(cast["charlie"]) == {rows["theirs"].id}


def test_it_filters_by_verdict(cast, rows):
    assert found(cast["bob"], verdict="watermarked") == {rows["wm"].id}
    assert found(cast["bob"], verdict="inconclusive") == {rows["short"].id}
    assert "verdict" in errors(cast["bob"], verdict="maybe")


def test_the_date_range_includes_both_days(cast, rows):
    assert found(cast["alice"], since="2026-11-15") == {rows["wm"].id, rows["human"].id}
    assert found(cast["alice"], until="2026-11-15") == {rows["human"].id, rows["short"].id}
    assert found(cast["alice"], since="2026-11-15", until="2026-11-15") == {rows["human"].id}
    everything = found(cast["alice"])
    assert found(cast["alice"], since="0001-01-01", until="9999-12-31") == everything
    assert "since" in errors(cast["alice"], since="last week")
    assert "__all__" in errors(cast["alice"], since="2026-11-20", until="2026-11-01")


def test_it_filters_by_best_key_among_the_keys_the_team_may_test(cast, rows, alice_key):
    assert found(cast["alice"], key_id=str(alice_key.id)) == {rows["wm"].id, rows["human"].id}
    foreign, _ = key_create(name="other-private", team=cast["other"], tokenizer=alice_key.tokenizer)
    assert "key_id" in errors(cast["alice"], key_id=str(foreign.id))  # not a key of hers
    assert "key_id" in errors(cast["alice"], key_id="not-a-uuid")


def test_the_search_finds_document_names_client_ids_and_check_ids(cast, rows):
    alice = cast["alice"]
    assert found(alice, q="ESSAY-3") == {rows["wm"].id}  # never charlie's file of that name
    assert found(alice, q="post-7") == {rows["short"].id}
    assert found(alice, q=str(rows["human"].id)) == {rows["human"].id}
    assert found(alice, q=str(rows["human"].id)[:8]) == {rows["human"].id}
    assert found(alice, q=str(rows["human"].id)[:13].upper()) == {rows["human"].id}
    assert found(alice, q=str(rows["theirs"].id)) == set()
    assert found(alice, q="   ") == found(alice)
    assert "q" in errors(alice, q="x" * 201)


def test_only_a_team_admin_filters_by_submitter(cast, rows):
    assert "submitter" in errors(cast["alice"], submitter="bob")
    Membership.objects.filter(user=cast["alice"]).update(is_admin=True)
    assert found(cast["alice"], submitter="bob") == {rows["human"].id}
    assert "submitter" in errors(cast["alice"], submitter="charlie")  # not on her team
    assert "submitter" in errors(cast["alice"], submitter="bob\x00")  # before any query


def test_filters_combine(cast, rows, alice_key):
    query = {"verdict": "watermarked", "key_id": str(alice_key.id), "q": "essay"}
    assert found(cast["alice"], **query) == {rows["wm"].id}
    assert found(cast["alice"], **query, since="2026-11-21") == set()


def test_active_tells_a_narrowed_list_from_the_whole_history(cast):
    request = SimpleNamespace(user=cast["alice"])
    assert not CheckFilter({}, request=request).active
    assert not CheckFilter({"page": "2"}, request=request).active
    assert CheckFilter({"verdict": "watermarked"}, request=request).active
