"""The webhook task: a thin adapter around services.delivery_attempt with Celery's
exponential backoff (base and cap from settings, no jitter so the schedule is predictable:
base, 2 x base, 4 x base, ...)."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task
from django.conf import settings

from provenance.webhooks import services


class DeliveryTask(Task):
    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        # Retries exhausted (or a bug): the delivery must not stay pending forever.
        services.delivery_give_up(args[0], f"gave up: {exc}"[:300])


@shared_task(
    name=services.DELIVER,
    base=DeliveryTask,
    acks_late=True,
    autoretry_for=(services.DeliveryFailed,),
    retry_backoff=settings.PROVENANCE_WEBHOOK_BACKOFF,
    retry_backoff_max=settings.PROVENANCE_WEBHOOK_BACKOFF_MAX,
    retry_jitter=False,
    max_retries=settings.PROVENANCE_WEBHOOK_MAX_RETRIES,
    soft_time_limit=60,
    time_limit=90,
    serializer="json",
)
def webhook_deliver_task(delivery_id: str) -> None:
    services.delivery_attempt(delivery_id)
