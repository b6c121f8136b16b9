"""``GET /api/v1/checks/{id}/report`` and ``/.well-known/jwks.json``: who gets what."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from detector.reports.signed import MEDIA_TYPE, verify
from tests.provenance.reports.reports_data import scored_check

pytestmark = pytest.mark.django_db


def test_the_owner_gets_the_report_as_an_attachment(api_for, alice_key, wm_text):
    alice = api_for("alice")
    check_id = scored_check(alice, wm_text)
    answer = alice.get(f"/api/v1/checks/{check_id}/report")
    assert answer.status_code == 200 and answer["Content-Type"] == MEDIA_TYPE
    assert answer["Content-Disposition"] == f'attachment; filename="report-{check_id}.jws"'
    payload = verify(answer.content.decode(), alice.get("/.well-known/jwks.json").json()).payload
    assert payload["subject"] == {
        "kind": "check",
        "id": check_id,
        "audit_id": None,
        "client_id": None,
    }


def test_a_teammate_may_read_it_and_an_outsider_or_anonymous_may_not(api_for, alice_key, wm_text):
    check_id = scored_check(api_for("alice"), wm_text)
    assert api_for("bob").get(f"/api/v1/checks/{check_id}/report").status_code == 200
    assert api_for("charlie").get(f"/api/v1/checks/{check_id}/report").status_code == 404
    assert APIClient().get(f"/api/v1/checks/{check_id}/report").status_code in (401, 403)


def test_an_unfinished_check_has_no_report(api_for, alice_key):
    alice = api_for("alice")
    check_id = alice.post("/api/v1/checks", {"text": "pending"}, format="json").json()["id"]
    answer = alice.get(f"/api/v1/checks/{check_id}/report")
    assert answer.status_code == 409
    assert "a report needs a finished check" in answer.content.decode()


def test_the_key_set_is_public_cached_and_never_empty(db):
    answer = APIClient().get("/.well-known/jwks.json")
    assert answer.status_code == 200 and answer["Cache-Control"] == "public, max-age=300"
    (key,) = answer.json()["keys"]
    assert key["kty"] == "OKP" and key["crv"] == "Ed25519" and "d" not in key
    assert APIClient().post("/.well-known/jwks.json").status_code == 405
