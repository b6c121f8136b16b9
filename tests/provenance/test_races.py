"""Races between genuinely concurrent requests and task deliveries, against the file-backed
SQLite test database (each thread has its own connection, as separate processes would)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests
from django.db import connection
from django.db.models import Sum
from knox.models import AuthToken

from provenance.audits.models import Audit
from provenance.checks.models import Check, Hypothesis
from provenance.keys.services import key_create
from provenance.usage.models import DetectionLog

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sent_tasks(monkeypatch) -> list[str]:
    """Task messages are recorded, not sent: these tests run no broker."""
    from provenance.celery import app

    sent: list[str] = []
    monkeypatch.setattr(app, "send_task", lambda name, *args, **kwargs: sent.append(name))
    return sent


def _in_parallel(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run the calls at once, each in its own thread with its own database connection."""
    start = threading.Barrier(len(calls))

    def run(call: Callable[[], Any]) -> Any:
        start.wait()
        try:
            return call()
        finally:
            connection.close()

    with ThreadPoolExecutor(len(calls)) as pool:
        return [future.result() for future in [pool.submit(run, call) for call in calls]]


def test_concurrent_requests_cannot_both_take_the_last_of_the_quota(
    live_server, cast, alice_key, settings, monkeypatch, sent_tasks
):
    from provenance.usage import services as quota

    settings.PROVENANCE_DAILY_QUOTA = 3
    take = quota.quota_take

    def slow_take(*args):  # widens the window between taking the quota and the commit
        taken = take(*args)
        time.sleep(0.2)
        return taken

    monkeypatch.setattr(quota, "quota_take", slow_take)
    _, token = AuthToken.objects.create(user=cast["alice"])

    def post(i: int) -> Callable[[], int]:
        return lambda: (
            requests.post(
                f"{live_server.url}/api/v1/checks",
                json={"text": f"text number {i}"},
                headers={"Authorization": f"Token {token}"},
                timeout=60,
            ).status_code
        )

    codes = _in_parallel([post(i) for i in range(6)])
    assert sorted(codes) == [202, 202, 202, 429, 429, 429]
    assert Check.objects.count() == 3
    assert DetectionLog.objects.aggregate(n=Sum("num_texts"))["n"] == 3
    assert len(sent_tasks) == 3


def _hold_at_scoring(monkeypatch, module: Any, name: str, parties: int) -> None:
    """Both deliveries pass their claim before either stores a result. They are deliveries
    of one message (one task id: its worker process died and it came again), the one case
    in which two tasks hold the same checks at once; other tasks find them claimed."""
    meet = threading.Barrier(parties, timeout=60)
    score = getattr(module, name)

    def held(*args: Any, **kwargs: Any) -> Any:
        result = score(*args, **kwargs)
        meet.wait()
        return result

    monkeypatch.setattr(module, name, held)


def test_two_deliveries_of_one_check_task_racing_store_one_result_set(
    cast, alice_key, tokenizer_row, wm_text, monkeypatch, sent_tasks
):
    from provenance.checks.services import check_create
    from provenance.checks.services import checks as check_services
    from provenance.checks.tasks import check_score_task

    key_create(name="second", team=cast["acme"], tokenizer=tokenizer_row)
    check = check_create(user=cast["alice"], text=wm_text)
    _hold_at_scoring(monkeypatch, check_services, "score_text", parties=2)
    deliver = check_score_task.apply
    _in_parallel([lambda: deliver(args=[str(check.id)], task_id="one-message").get()] * 2)
    check.refresh_from_db()
    assert check.status == "done" and check.is_watermarked and check.num_hypotheses == 2
    indexes = list(Hypothesis.objects.filter(check_run=check).values_list("index", flat=True))
    assert sorted(indexes) == [0, 1]


def test_two_deliveries_of_one_audit_chunk_racing_store_one_result_set(
    cast, alice_key, wm_text, human_text, monkeypatch, sent_tasks
):
    from provenance.audits import services as audit_services
    from provenance.audits.services import audit_submit
    from provenance.audits.tasks import audit_score_chunk_task

    texts = [{"client_id": str(i), "text": t} for i, t in enumerate([wm_text, human_text] * 3)]
    audit, _ = audit_submit(user=cast["alice"], texts=texts)
    ids = [str(cid) for cid in audit.checks.values_list("id", flat=True)]
    _hold_at_scoring(monkeypatch, audit_services, "score_texts", parties=2)
    deliver = audit_score_chunk_task.apply
    _in_parallel([lambda: deliver(args=[str(audit.id), ids], task_id="one-message").get()] * 2)
    audit.refresh_from_db()
    assert audit.status == "done"
    assert Hypothesis.objects.filter(check_run__audit=audit).count() == 6
    verdicts = dict(audit.checks.values_list("client_id", "is_watermarked"))
    assert verdicts == {str(i): i % 2 == 0 for i in range(6)}
    assert Audit.objects.count() == 1


def test_a_second_message_for_a_claimed_check_leaves_it_to_the_holder(
    cast, alice_key, wm_text, monkeypatch, sent_tasks
):
    from provenance.checks.services import check_create
    from provenance.checks.services.claims import checks_claim
    from provenance.checks.tasks import check_score_task

    check = check_create(user=cast["alice"], text=wm_text)
    checks_claim([check.id], "the-holder")  # a live task holds it
    check_score_task.apply(args=[str(check.id)], task_id="a-swept-copy").get()
    check.refresh_from_db()
    assert check.status == "running" and check.claim == "the-holder"
    assert not Hypothesis.objects.filter(check_run=check).exists()
