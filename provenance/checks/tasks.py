"""Celery tasks of checks: thin adapters that take ids and call the services.

Keys are loaded and decrypted inside the worker; messages carry only ids (UUID strings,
JSON). Tasks may run twice (late acks, the sweeper): the services make that harmless.
Options shared by every task (JSON, late acks, reject on a lost worker) are the CELERY_*
settings; the time limits are settings too, since the sweeper's timeout derives from them.
Services publish these tasks by name (``provenance.checks.queue``), never by importing them.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Task, shared_task
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_process_init, worker_ready
from django.conf import settings
from django.db import InterfaceError, OperationalError

from provenance.checks import queue, services

logger = logging.getLogger(__name__)

# Database hiccups (a locked SQLite file, a dropped PostgreSQL connection) are worth a retry.
RETRIES: dict[str, Any] = {
    "autoretry_for": (OperationalError, InterfaceError),
    "retry_backoff": 1,
    "retry_backoff_max": 30,
    "max_retries": 5,
}


class CheckTask(Task):
    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        # Retries exhausted or a bug: the row must not stay "running" forever.
        services.check_fail(args[0], f"scoring failed ({type(exc).__name__})")


@shared_task(
    name=queue.SCORE_CHECK,
    base=CheckTask,
    bind=True,
    soft_time_limit=settings.PROVENANCE_CHECK_SOFT_TIME_LIMIT,
    time_limit=settings.PROVENANCE_CHECK_TIME_LIMIT,
    **RETRIES,
)
def check_score_task(self: Task, check_id: str) -> None:
    try:
        services.check_score(check_id, claim=self.request.id or "")
    except SoftTimeLimitExceeded:
        services.check_fail(check_id, "scoring exceeded its time limit")


@shared_task(
    name=queue.READ_CHECK,
    soft_time_limit=settings.PROVENANCE_CHECK_SOFT_TIME_LIMIT,
    time_limit=settings.PROVENANCE_CHECK_TIME_LIMIT,
    **RETRIES,
)
def check_read_task(check_id: str) -> None:
    """The reading of a check answered with its model-free verdict (reading "pending")."""
    try:
        services.check_read(check_id)
    except SoftTimeLimitExceeded:
        logger.warning("a check's reading exceeded its time limit; its verdict stands")
        services.reading_skip(check_id)


@worker_ready.connect
@worker_process_init.connect
def _warm_tokenizers(**_: Any) -> None:
    """Load every registered tokenizer once, before the first task needs it."""
    try:
        services.tokenizers_warm()
    except Exception:  # a cold cache is slower, not wrong: log and carry on
        logger.exception("tokenizer warm-up failed")
