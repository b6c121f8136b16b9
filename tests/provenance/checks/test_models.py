"""The web product stores the detector's three-way verdict; it does not decide again."""

from __future__ import annotations

import csv
import io
import json

import pytest

from detector.evidence.power import VERDICTS
from detector.reports.signed import verify
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
    assert body["verdict_tokens_needed"] == check.verdict_tokens_needed
    assert alice.get("/api/v1/checks").json()["results"][0]["verdict"] == "inconclusive"


def test_a_pending_check_has_no_verdict_yet(api_for, alice_key):
    alice = api_for("alice")
    body = alice.post("/api/v1/checks", {"text": "a text"}, format="json").json()
    assert body["verdict"] == "" and body["is_watermarked"] is None


def _audit_with_verdicts(alice, verdicts):
    """An audit whose texts carry the given stored (status, is_watermarked, verdict): the
    counts read what the detector stored, so the rows are set as a scored audit leaves them."""
    items = [{"client_id": f"doc-{i}", "text": f"text {i}"} for i in range(len(verdicts))]
    audit_id = alice.post("/api/v1/audits", {"texts": items}, format="json").json()["id"]
    for i, (status, flagged, verdict) in enumerate(verdicts):
        Check.objects.filter(audit_id=audit_id, client_id=f"doc-{i}").update(
            status=status, is_watermarked=flagged, verdict=verdict
        )
    return audit_id


MIXED = [
    ("done", True, "watermarked"),
    ("done", False, "not_watermarked"),
    ("done", False, "not_watermarked"),
    ("done", False, "inconclusive"),
    ("done", False, "inconclusive"),
    ("done", False, "inconclusive"),
    ("done", False, ""),  # scored before verdicts were stored: in none of the three
    ("failed", None, ""),
    ("pending", None, ""),
]


def test_audit_counts_split_the_finished_texts_by_verdict(api_for, alice_key):
    alice = api_for("alice")
    audit_id = _audit_with_verdicts(alice, MIXED)
    counts = alice.get(f"/api/v1/audits/{audit_id}").json()["counts"]
    assert counts == {
        "done": 7,
        "failed": 1,
        "open": 1,
        "watermarked": 1,
        "not_watermarked": 2,
        "inconclusive": 3,
    }


def test_the_audit_page_shows_each_verdicts_count(api_for, client, cast, alice_key):
    audit_id = _audit_with_verdicts(api_for("alice"), MIXED)
    client.force_login(cast["alice"])
    page = client.get(f"/audits/{audit_id}/").content.decode()
    assert '<span id="count-watermarked">1 watermarked</span>' in page
    assert '<span id="count-not-watermarked">2 not watermarked</span>' in page
    assert '<span id="count-inconclusive">3 inconclusive</span>' in page


def test_the_audit_page_shows_the_counts_in_the_readers_language(api_for, client, cast, alice_key):
    audit_id = _audit_with_verdicts(api_for("alice"), MIXED)
    client.force_login(cast["alice"])
    page = client.get(f"/audits/{audit_id}/", HTTP_ACCEPT_LANGUAGE="ja").content.decode()
    assert '<span id="count-not-watermarked">透かしなし 2</span>' in page
    assert '<span id="count-inconclusive">判定不能 3</span>' in page


def test_the_tokens_needed_figure_is_in_detect_exports_and_reports(api_for, alice_key, human_text):
    alice = api_for("alice")
    detect = alice.post("/detect", {"text": human_text}, format="json").json()
    assert detect["verdict"] == "inconclusive"
    assert f"about {detect['verdict_tokens_needed']} are needed" in detect["verdict_reason"]
    items = [{"client_id": "doc-0", "text": human_text}]
    audit_id = alice.post("/api/v1/audits", {"texts": items}, format="json").json()["id"]
    check = Check.objects.get(audit_id=audit_id)
    check_score(check.id)
    check.refresh_from_db()
    assert check.verdict_tokens_needed == detect["verdict_tokens_needed"]
    exported = b"".join(alice.get(f"/api/v1/audits/{audit_id}/export.json").streaming_content)
    (row,) = json.loads(exported)["results"]
    assert row["verdict_tokens_needed"] == check.verdict_tokens_needed
    assert "key_fpr_above_threshold" in row and row["key_fpr_above_threshold"] is None
    single = alice.get(f"/api/v1/checks/{check.id}/export.csv").content.decode()
    assert next(csv.DictReader(io.StringIO(single)))["verdict_tokens_needed"] == str(
        check.verdict_tokens_needed
    )
    token = alice.get(f"/api/v1/checks/{check.id}/report").content.decode()
    jwks = alice.get("/.well-known/jwks.json").json()
    verdict = verify(token, jwks).payload["verdict"]
    assert verdict["tokens_needed"] == check.verdict_tokens_needed
    assert verdict["key_measured_fpr"] is None  # the key was not calibrated when scored
