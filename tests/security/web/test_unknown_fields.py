"""The API's bodies are allowlists: a field no route declares is refused with 400 naming it,
never dropped in silence. A misspelled ``key_ids`` ("keys_ids") used to be ignored, so the
check tested every key of the team where the caller meant to narrow it, and any field a
future version reads would have been accepted today unnoticed."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from provenance.audits.models import Audit
from provenance.checks.models import Check
from provenance.keys.models import WatermarkKey

pytestmark = pytest.mark.django_db


def _refused(response, name):
    assert response.status_code == 400, response.content
    assert name in response.content.decode()


def test_a_check_with_a_misspelled_field_is_refused_and_nothing_is_stored(api_for, alice_key):
    alice = api_for("alice")
    response = alice.post(
        "/api/v1/checks", {"text": "a text", "keys_ids": [str(alice_key.id)]}, format="json"
    )
    _refused(response, "keys_ids")
    assert Check.objects.count() == 0


def test_a_multipart_check_with_an_extra_part_is_refused(api_for, alice_key):
    response = api_for("alice").post(
        "/api/v1/checks", {"text": "a text", "threshold": "0.5"}, format="multipart"
    )
    _refused(response, "threshold")
    assert Check.objects.count() == 0


def test_detect_refuses_an_unknown_field(api_for, alice_key):
    _refused(api_for("alice").post("/detect", {"text": "a", "key": 42}, format="json"), "key")


def test_an_audit_with_an_unknown_field_is_refused(api_for, alice_key):
    body = {"texts": [{"client_id": "a", "text": "a text"}], "priority": 9}
    _refused(api_for("alice").post("/api/v1/audits", body, format="json"), "priority")
    assert Audit.objects.count() == 0


def test_a_key_with_an_unknown_field_is_refused(api_for, cast, alice_key):
    cast["alice"].user_permissions.add(Permission.objects.get(codename="add_watermarkkey"))
    body = {"name": "k2", "owner_team": "other"}
    _refused(api_for("alice").post("/api/v1/keys", body, format="json"), "owner_team")
    assert WatermarkKey.objects.count() == 1


def test_stream_bodies_refuse_unknown_fields(api_for, alice_key):
    alice = api_for("alice")
    _refused(alice.post("/api/v1/streams", {"threshold": 0.9}, format="json"), "threshold")
    stream = alice.post("/api/v1/streams", {}, format="json").json()["id"]
    body = {"text": "more", "score": 99}
    _refused(alice.post(f"/api/v1/streams/{stream}/append", body, format="json"), "score")


def test_many_unknown_fields_are_named_briefly(api_for, alice_key):
    body = {"text": "a text", **{f"extra{i:03d}": i for i in range(200)}}
    response = api_for("alice").post("/api/v1/checks", body, format="json")
    _refused(response, "extra000")
    assert "195 more" in response.content.decode() and len(response.content) < 1000
