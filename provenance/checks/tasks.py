"""Celery tasks: thin adapters that take ids and call the services.

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
from celery.signals import worker_init, worker_process_init, worker_ready, worker_shutdown
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError

from provenance.checks import queue, services, workers

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


class AuditChunkTask(Task):
    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        for check_id in args[1]:
            services.check_fail(check_id, f"scoring failed ({type(exc).__name__})")
        services.audit_refresh(args[0])


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
    name=queue.SCORE_AUDIT_CHUNK,
    base=AuditChunkTask,
    bind=True,
    soft_time_limit=settings.PROVENANCE_AUDIT_CHUNK_SOFT_TIME_LIMIT,
    time_limit=settings.PROVENANCE_AUDIT_CHUNK_TIME_LIMIT,
    **RETRIES,
)
def audit_score_chunk_task(self: Task, audit_id: str, check_ids: list[str]) -> None:
    try:
        services.audit_score_chunk(audit_id, check_ids, claim=self.request.id or "")
    except SoftTimeLimitExceeded:
        services.audit_fail(audit_id, "scoring exceeded its time limit", check_ids)


@worker_ready.connect
@worker_process_init.connect
def _warm_tokenizers(**_: Any) -> None:
    """Load every registered tokenizer once, before the first task needs it."""
    try:
        services.tokenizers_warm()
    except Exception:  # a cold cache is slower, not wrong: log and carry on
        logger.exception("tokenizer warm-up failed")


_heartbeat: workers.Heartbeat | None = None


@worker_init.connect
def _register_worker(sender: Any, **_: Any) -> None:
    """Before the pool forks: the worker row exists and every pool process knows its id. A
    live-looking worker of the same node name is the one this process replaces: dead."""
    replaced = workers.worker_start(sender.hostname)[1]
    logger.info("worker %s registered (replaces %d)", sender.hostname, replaced)


@worker_ready.connect
def _start_heartbeat(**_: Any) -> None:
    """Beat from now on, and queue again at once what a replaced worker held."""
    global _heartbeat
    worker = workers.current_worker()
    if worker is None:
        return
    _heartbeat = workers.Heartbeat(worker)
    _heartbeat.start()
    try:
        services.checks_sweep(pending_after=settings.PROVENANCE_SWEEP_PENDING_AFTER)
    except DatabaseError:  # the sweeper's next pass does it
        logger.exception("recovery sweep at start failed")


@worker_shutdown.connect
def _stop_heartbeat(**_: Any) -> None:
    worker = workers.current_worker()
    if _heartbeat is not None:
        _heartbeat.stop()
    if worker is not None:
        try:
            workers.worker_stop(worker)
        except DatabaseError:  # its heartbeat stops: it is found dead a little later
            logger.warning("could not mark worker %s stopped", worker.nodename)
