"""The audits API (provenance.audits.api): an audit runs and exports, lists are paginated and
team-scoped, the Idempotency-Key replays, bad bodies store nothing."""

from __future__ import annotations

import csv
import io
import json
import uuid

import pytest

from provenance.audits.api import AuditOutput
from provenance.audits.models import Audit
from provenance.audits.services import audit_score_chunk
from provenance.checks.models import Check


@pytest.fixture
def alice(api_for):
    return api_for("alice")


def _audit(client, texts, key=None, **extra):
    items = [{"client_id": f"doc-{i}", "text": t} for i, t in enumerate(texts)]
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    return client.post("/api/v1/audits", {"texts": items, **extra}, format="json", **headers)


def _run(audit_id):
    audit_score_chunk(
        audit_id, list(Check.objects.filter(audit_id=audit_id).values_list("id", flat=True))
    )


def test_an_audit_runs_and_exports_as_csv_and_json(alice, alice_key, wm_text, human_text):
    response = _audit(alice, [wm_text, human_text])
    assert response.status_code == 202
    audit_id = response.json()["id"]
    _run(audit_id)
    detail = alice.get(f"/api/v1/audits/{audit_id}").json()
    assert set(detail) == set(AuditOutput.Meta.fields)
    assert detail["status"] == "done"
    assert (detail["counts"]["watermarked"], detail["counts"]["inconclusive"]) == (1, 1)
    assert detail["counts"]["not_watermarked"] == 0
    items = alice.get(f"/api/v1/audits/{audit_id}/items?limit=1").json()
    assert items["count"] == 2 and items["results"][0]["client_id"] == "doc-0"
    exported = b"".join(alice.get(f"/api/v1/audits/{audit_id}/export.csv").streaming_content)
    rows = list(csv.DictReader(io.StringIO(exported.decode())))
    assert [(r["client_id"], r["is_watermarked"], r["verdict"]) for r in rows] == [
        ("doc-0", "True", "watermarked"),
        ("doc-1", "False", "inconclusive"),
    ]
    assert rows[1]["verdict_reason"].startswith("only")
    as_json = b"".join(alice.get(f"/api/v1/audits/{audit_id}/export.json").streaming_content)
    results = json.loads(as_json)["results"]
    assert [r["is_watermarked"] for r in results] == [True, False]
    assert [r["verdict"] for r in results] == ["watermarked", "inconclusive"]


def test_an_unknown_export_format_is_404(alice, alice_key):
    audit_id = _audit(alice, ["a text"]).json()["id"]
    assert alice.get(f"/api/v1/audits/{audit_id}/export.xml").status_code == 404


def test_audits_list_is_paginated_and_team_scoped(api_for, alice_key):
    alice = api_for("alice")
    for i in range(3):
        _audit(alice, [f"text {i}"])
    assert alice.get("/api/v1/audits?limit=2").json()["count"] == 3
    assert api_for("bob").get("/api/v1/audits").json()["count"] == 3
    charlie = api_for("charlie")
    assert charlie.get("/api/v1/audits").json()["count"] == 0
    audit_id = Audit.objects.first().id
    for suffix in ["", "/items", "/export.csv", "/export.json"]:
        assert charlie.get(f"/api/v1/audits/{audit_id}{suffix}").status_code == 404


def test_the_idempotency_key_header_replays_and_detects_conflicts(alice, alice_key):
    first = _audit(alice, ["one", "two"], key="batch-7")
    again = _audit(alice, ["one", "two"], key="batch-7")
    assert first.status_code == 202 and again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert _audit(alice, ["three"], key="batch-7").status_code == 409
    assert Audit.objects.count() == 1 and Check.objects.count() == 2


@pytest.mark.parametrize(
    ("payload", "status", "fragment"),
    [
        ({"texts": []}, 400, "texts"),
        ({"texts": "nope"}, 400, "texts"),
        ({"texts": [{"client_id": "a"}]}, 400, "texts[0]"),
        ({"texts": [{"text": ""}]}, 400, "texts[0].text is empty"),
        ({"texts": [{"text": "ok", "client_id": 7}]}, 400, "client_id"),
        ({"texts": [{"text": "ok"}], "key_ids": [str(uuid.uuid4())]}, 400, "unknown key"),
    ],
)
def test_bad_audit_bodies_get_a_clear_4xx_and_store_nothing(
    alice, alice_key, payload, status, fragment
):
    response = alice.post("/api/v1/audits", payload, format="json")
    assert response.status_code == status
    assert fragment in json.dumps(response.json())
    assert Audit.objects.count() == 0 and Check.objects.count() == 0


def test_a_batch_over_the_limit_gets_413(alice, alice_key, settings):
    settings.PROVENANCE_MAX_AUDIT_TEXTS = 2
    response = _audit(alice, ["a", "b", "c"])
    assert response.status_code == 413 and "at most 2" in response.json()["detail"]
    assert Audit.objects.count() == 0


def test_a_body_over_the_upload_limit_gets_413(alice, alice_key, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = _audit(alice, ["x" * 600, "y" * 600])
    assert response.status_code == 413


def test_items_and_exports_follow_the_pages_filter_and_order(alice, alice_key, wm_text, human_text):
    audit_id = _audit(alice, [human_text, wm_text, wm_text[:400]]).json()["id"]
    _run(audit_id)
    base = f"/api/v1/audits/{audit_id}"
    items = alice.get(f"{base}/items?verdict=watermarked&sort=-scored").json()["results"]
    assert [i["client_id"] for i in items] == ["doc-1", "doc-2"]
    exported = b"".join(alice.get(f"{base}/export.csv?verdict=inconclusive").streaming_content)
    assert [r["client_id"] for r in csv.DictReader(io.StringIO(exported.decode()))] == ["doc-0"]
    as_json = b"".join(alice.get(f"{base}/export.json?sort=p_value").streaming_content)
    assert [r["client_id"] for r in json.loads(as_json)["results"]] == ["doc-1", "doc-2", "doc-0"]


def test_an_unknown_filter_or_order_is_a_400_in_the_api(alice, alice_key):
    audit_id = _audit(alice, ["a text"]).json()["id"]
    response = alice.get(f"/api/v1/audits/{audit_id}/items?verdict=purple")
    assert response.status_code == 400 and "verdict must be one of" in response.json()["detail"]
    response = alice.get(f"/api/v1/audits/{audit_id}/export.csv?sort=colour")
    assert response.status_code == 400 and response.json()["code"] == "invalid"
