"""The audit chunk task, run eagerly: it scores its checks and finishes the audit; a failure
fails its chunk's checks (never another chunk's) and the audit is finished all the same."""

from __future__ import annotations

import pytest
from celery.exceptions import SoftTimeLimitExceeded

from provenance.audits import services, tasks
from provenance.audits.models import Audit
from provenance.audits.services import audit_submit
from provenance.checks.models import Check, Status


@pytest.fixture
def audit(cast, alice_key, wm_text, human_text):
    texts = [{"client_id": "wm", "text": wm_text}, {"client_id": "human", "text": human_text}]
    return audit_submit(user=cast["alice"], texts=texts)[0]


def _ids(audit):
    return [
        str(i)
        for i in Check.objects.filter(audit=audit).order_by("position").values_list("id", flat=True)
    ]


def test_the_task_scores_its_chunk_and_finishes_the_audit(audit):
    result = tasks.audit_score_chunk_task.apply(args=[str(audit.id), _ids(audit)], task_id="t-1")
    assert result.successful()
    checks = {c.client_id: c for c in Check.objects.filter(audit=audit)}
    assert checks["wm"].status == Status.DONE and checks["wm"].is_watermarked is True
    assert checks["human"].status == Status.DONE and checks["human"].is_watermarked is False
    assert Audit.objects.get(id=audit.id).status == Status.DONE


def test_a_failing_chunk_fails_its_checks_only(audit, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("boom")

    monkeypatch.setattr(services, "audit_score_chunk", broken)
    first, second = _ids(audit)
    result = tasks.audit_score_chunk_task.apply(args=[str(audit.id), [first]])
    assert result.failed()
    assert Check.objects.get(id=first).status == Status.FAILED
    assert Check.objects.get(id=first).failure_reason == "scoring failed (ValueError)"
    assert Check.objects.get(id=second).status == Status.PENDING
    assert Audit.objects.get(id=audit.id).status != Status.DONE  # the other chunk is open


def test_a_chunk_over_its_time_limit_is_failed_with_that_reason(audit, monkeypatch):
    def slow(*args, **kwargs):
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(services, "audit_score_chunk", slow)
    ids = _ids(audit)
    assert tasks.audit_score_chunk_task.apply(args=[str(audit.id), ids]).successful()
    reasons = set(Check.objects.filter(audit=audit).values_list("failure_reason", flat=True))
    assert reasons == {"scoring exceeded its time limit"}
    assert Audit.objects.get(id=audit.id).status == Status.DONE
