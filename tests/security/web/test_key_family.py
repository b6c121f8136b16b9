"""Every team's family is bounded: a check that names no keys tests at most
``PROVENANCE_MAX_SHARED_KEYS`` keys of other teams, however often they rotate, retire or share
(each such key is one more hypothesis: more work, a stricter correction, more
"inconclusive"); retired keys are tested by default for ``PROVENANCE_RETIRED_KEY_WINDOW_DAYS``
and then only when named; a team reads its family's size and reasons."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.utils import timezone

from provenance.checks.models import Check
from provenance.keys.models import WatermarkKey
from provenance.keys.services import key_create, key_retire

pytestmark = pytest.mark.django_db


def _grant(user, *codenames):
    for codename in codenames:
        user.user_permissions.add(Permission.objects.get(codename=codename))


def _hypotheses(client, text, **body):
    """The keys a check of ``client``'s team tests: the stored hypotheses of a new check."""
    response = client.post("/api/v1/checks", {"text": text, **body}, format="json")
    assert response.status_code in (201, 202), response.content
    return Check.objects.get(id=response.json()["id"]).key_ids


def test_rotating_a_shared_key_cannot_grow_another_teams_family_past_the_cap(
    api_for, cast, wm_text, settings
):
    assert settings.PROVENANCE_MAX_SHARED_KEYS == 10
    _grant(cast["charlie"], "add_watermarkkey", "change_watermarkkey", "share_watermarkkey")
    charlie = api_for("charlie")
    made = charlie.post("/api/v1/keys", {"name": "s", "shared": True}, format="json")
    assert made.status_code == 201, made.content
    key_id = made.json()["id"]
    for _ in range(12):
        rotated = charlie.post(f"/api/v1/keys/{key_id}/rotate")
        assert rotated.status_code == 201, rotated.content
        key_id = rotated.json()["id"]
    assert WatermarkKey.objects.filter(team=cast["other"], shared=True).count() == 13
    tested = _hypotheses(api_for("alice"), wm_text)  # acme owns no key: all are charlie's
    assert len(tested) == 10
    assert key_id in tested  # the active key first, then the most recently retired ones
    family = api_for("alice").get("/api/v1/keys/family").json()
    assert family["hypotheses"] == 10 and family["shared_cap"] == 10
    assert family["shared_active"] == 1 and family["shared_retired_within_window"] == 9
    assert family["left_out"] == {"retired_past_window": 0, "shared_past_cap": 3}
    # Charlie's own team still tests all thirteen (its own keys, within the window).
    assert len(_hypotheses(charlie, wm_text)) == 13


def test_a_lowered_cap_bounds_active_shared_keys_too(cast, tokenizer_row, api_for, settings):
    for i in range(4):
        key_create(name=f"s{i}", team=cast["other"], tokenizer=tokenizer_row, shared=True)
    settings.PROVENANCE_MAX_SHARED_KEYS = 2
    family = api_for("alice").get("/api/v1/keys/family").json()
    assert family["shared_active"] == 2 and family["left_out"]["shared_past_cap"] == 2


def test_retired_keys_are_tested_for_the_window_then_only_when_named(
    api_for, cast, alice_key, tokenizer_row, wm_text, settings
):
    assert settings.PROVENANCE_RETIRED_KEY_WINDOW_DAYS == 365
    recent, _ = key_create(name="recent", team=cast["acme"], tokenizer=tokenizer_row)
    old, _ = key_create(name="old", team=cast["acme"], tokenizer=tokenizer_row)
    key_retire(key=recent)
    key_retire(key=old)
    WatermarkKey.objects.filter(id=old.id).update(retired_at=timezone.now() - timedelta(days=400))
    alice = api_for("alice")
    assert set(_hypotheses(alice, wm_text)) == {str(alice_key.id), str(recent.id)}
    assert _hypotheses(alice, wm_text, key_ids=[str(old.id)]) == [str(old.id)]
    listed = {key["id"]: key for key in alice.get("/api/v1/keys").json()["results"]}
    assert listed[str(alice_key.id)]["family_reason"] == "own_active"
    assert listed[str(recent.id)]["family_reason"] == "own_retired_within_window"
    assert listed[str(old.id)]["family_reason"] == "retired_past_window"
    assert [listed[k]["tested_by_default"] for k in (str(recent.id), str(old.id))] == [True, False]
    settings.PROVENANCE_RETIRED_KEY_WINDOW_DAYS = 0  # retired keys only when named
    assert _hypotheses(alice, wm_text) == [str(alice_key.id)]


def test_the_keys_page_says_how_many_keys_a_check_tests_and_why(
    client, cast, alice_key, tokenizer_row
):
    shared, _ = key_create(name="theirs", team=cast["other"], tokenizer=tokenizer_row, shared=True)
    key_retire(key=shared)
    client.force_login(cast["alice"])
    page = client.get("/keys/").content.decode()
    assert "A check that names no keys tests 2 keys: 1 active keys of your team" in page
    assert "0 active and 1 retired keys other teams share (at most 10 of theirs)" in page
