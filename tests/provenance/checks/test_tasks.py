"""The task path for real: a Redis server and a Celery worker process (not eager mode) on
a file SQLite database that both processes open."""

from __future__ import annotations

import uuid

import pytest

from provenance.audits.models import Audit
from provenance.checks.models import Check
from provenance.checks.tasks import check_score_task
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def _finished(check_id: int) -> bool:
    return Check.objects.get(id=check_id).status in ("done", "failed")


def test_a_check_posted_to_the_api_is_scored_by_the_worker(
    celery_worker, api_for, alice_key, wm_text
):
    alice = api_for("alice")
    check_id = alice.post("/api/v1/checks", {"text": wm_text}, format="json").json()["id"]
    wait_until(lambda: alice.get(f"/api/v1/checks/{check_id}").json()["status"] == "done", 60)
    body = alice.get(f"/api/v1/checks/{check_id}").json()
    assert body["is_watermarked"] is True and body["best_key"] == "acme-main"
    assert body["started_at"] and body["finished_at"] and body["scoring_ms"] > 0


def test_a_redelivered_task_does_not_score_twice(celery_worker, api_for, alice_key, human_text):
    alice = api_for("alice")
    check_id = alice.post("/api/v1/checks", {"text": human_text}, format="json").json()["id"]
    wait_until(lambda: _finished(check_id), 60)
    finished_at = Check.objects.get(id=check_id).finished_at
    check_score_task.delay(check_id)
    marker = alice.post("/api/v1/checks", {"text": "a later text"}, format="json").json()["id"]
    wait_until(lambda: _finished(marker), 60)  # the queue is FIFO on one solo worker
    check = Check.objects.get(id=check_id)
    assert check.finished_at == finished_at and check.hypotheses.count() == 1


def test_an_audit_is_scored_by_the_worker_in_chunks(
    celery_worker, api_for, alice_key, wm_text, human_text, settings
):
    settings.PROVENANCE_AUDIT_CHUNK = 2
    alice = api_for("alice")
    texts = [wm_text, human_text, wm_text[:400], human_text[:300], "short one"]
    items = [{"client_id": f"doc-{i}", "text": t} for i, t in enumerate(texts)]
    audit_id = alice.post("/api/v1/audits", {"texts": items}, format="json").json()["id"]
    wait_until(lambda: Audit.objects.get(id=audit_id).status == "done", 60)
    detail = alice.get(f"/api/v1/audits/{audit_id}").json()
    verdicts = list(Check.objects.filter(audit_id=audit_id).values_list("verdict", flat=True))
    assert detail["counts"] == {
        "done": 5,
        "failed": 0,
        "open": 0,
        "watermarked": 2,
        "not_watermarked": verdicts.count("not_watermarked"),
        "inconclusive": verdicts.count("inconclusive"),
    }
    assert verdicts.count("watermarked") == 2 and verdicts.count("inconclusive") >= 2
    assert Check.objects.get(audit_id=audit_id, client_id="doc-0").is_watermarked


def test_a_key_deleted_before_scoring_fails_the_check_with_a_reason(
    celery_worker, cast, alice_key, human_text
):
    check = Check.objects.create(
        team=cast["acme"],
        submitted_by=cast["alice"],
        text=human_text,
        key_ids=[str(uuid.uuid4())],
        threshold=0.01,
    )
    check_score_task.delay(check.id)
    wait_until(lambda: _finished(check.id), 60)
    check.refresh_from_db()
    assert check.status == "failed" and "deleted" in check.failure_reason
