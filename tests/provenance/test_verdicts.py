"""The web product stores the detector's three-way verdict; it does not decide again."""

from __future__ import annotations

import pytest

from detector.power import VERDICTS
from provenance.checks.models import Check, Verdict
from provenance.checks.services import check_score

pytestmark = pytest.mark.django_db


def test_the_stored_choices_are_the_detectors_verdicts():
    assert list(Verdict.values) == list(VERDICTS)


def test_a_scored_check_stores_the_verdict_its_reason_and_the_tokens_needed(
    api_for, alice_key, human_text
):
    alice = api_for("alice")
    check_id = alice.post("/api/v1/checks", {"text": human_text}, format="json").json()["id"]
    check_score(check_id)
    check = Check.objects.get(id=check_id)
    assert (check.verdict, check.is_watermarked) == ("inconclusive", False)
    assert check.verdict_tokens_needed is not None and check.verdict_tokens_needed > 126
    assert f"about {check.verdict_tokens_needed} are needed" in check.verdict_reason
    body = alice.get(f"/api/v1/checks/{check_id}").json()
    assert body["verdict"] == "inconclusive" and body["verdict_reason"] == check.verdict_reason
    assert alice.get("/api/v1/checks").json()["results"][0]["verdict"] == "inconclusive"


def test_a_pending_check_has_no_verdict_yet(api_for, alice_key):
    alice = api_for("alice")
    body = alice.post("/api/v1/checks", {"text": "a text"}, format="json").json()
    assert body["verdict"] == "" and body["is_watermarked"] is None
