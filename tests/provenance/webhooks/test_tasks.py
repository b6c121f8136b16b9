"""The delivery task, run eagerly: retried with exponential backoff until the receiver
accepts, given up (never left pending) after the last retry."""

from __future__ import annotations

import pytest

from provenance.webhooks.models import WebhookDelivery
from provenance.webhooks.tasks import webhook_deliver_task
from tests.provenance.webhooks.hooks import delivery_row, finished_audit

pytestmark = pytest.mark.django_db


def test_a_500_is_retried_until_the_receiver_accepts(
    api_for, alice_key, human_text, receiver, allow_local, secret
):
    receiver.statuses = [500, 502]
    audit = finished_audit(api_for, [human_text], callback_url=receiver.url)
    delivery = WebhookDelivery.objects.get(audit=audit)
    webhook_deliver_task.apply(args=[str(delivery.id)])  # eager: retries run at once
    assert len(receiver.requests) == 3
    ids = {headers["X-Provenance-Delivery"] for _, headers, _ in receiver.requests}
    assert ids == {str(delivery.id)}
    delivery.refresh_from_db()
    assert delivery.status == "delivered" and delivery.attempts == 3


def test_a_receiver_that_keeps_failing_is_given_up_after_the_last_retry(
    api_for, alice_key, human_text, receiver, allow_local, secret, monkeypatch
):
    monkeypatch.setattr(webhook_deliver_task, "max_retries", 2)
    receiver.statuses = [500] * 10
    audit = finished_audit(api_for, [human_text], callback_url=receiver.url)
    delivery = WebhookDelivery.objects.get(audit=audit)
    webhook_deliver_task.apply(args=[str(delivery.id)])
    assert len(receiver.requests) == 3
    delivery.refresh_from_db()
    assert delivery.status == "failed" and delivery.attempts == 3
    assert "500" in delivery.last_error


def test_the_backoff_doubles_from_the_configured_base():
    from celery.utils.time import get_exponential_backoff_interval

    base = webhook_deliver_task.retry_backoff
    waits = [
        get_exponential_backoff_interval(base, n, webhook_deliver_task.retry_backoff_max, False)
        for n in range(4)
    ]
    assert waits == [base, 2 * base, 4 * base, 8 * base]


def test_a_bug_in_an_attempt_gives_the_delivery_up_with_the_reason(cast, monkeypatch):
    from provenance.webhooks import services

    def broken(delivery_id):
        raise RuntimeError("unexpected")

    monkeypatch.setattr(services, "delivery_attempt", broken)
    delivery = delivery_row(cast, "https://93.184.216.34/hook")
    assert webhook_deliver_task.apply(args=[str(delivery.id)]).failed()
    delivery.refresh_from_db()
    assert delivery.status == "failed" and delivery.last_error == "gave up: unexpected"
