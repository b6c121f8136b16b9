"""Celery tasks of audits: thin adapters that take ids and call the services (the options they
share with the checks' tasks: ``provenance.checks.tasks``): scoring a chunk of an audit's
checks, and reading an audit's uploaded files (``provenance.audits.extraction``)."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from provenance.audits import extraction, services
from provenance.checks import queue
from provenance.checks.services import check_fail
from provenance.checks.tasks import RETRIES
from provenance.errors import PayloadTooLarge, ProblemError


class AuditChunkTask(Task):
    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        for check_id in args[1]:
            check_fail(check_id, f"scoring failed ({type(exc).__name__})")
        services.audit_refresh(args[0])


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


class AuditExtractTask(Task):
    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        # Retries exhausted or a bug: the audit must not stay pending forever.
        problem = ProblemError(f"reading the uploaded files failed ({type(exc).__name__})")
        extraction.audit_refuse(args[0], [problem])


@shared_task(
    name=queue.EXTRACT_AUDIT,
    base=AuditExtractTask,
    bind=True,
    soft_time_limit=settings.PROVENANCE_AUDIT_CHUNK_SOFT_TIME_LIMIT,
    time_limit=settings.PROVENANCE_AUDIT_CHUNK_TIME_LIMIT,
    **RETRIES,
)
def audit_extract_task(self: Task, audit_id: str) -> None:
    try:
        extraction.audit_extract(audit_id)
    except SoftTimeLimitExceeded:
        reason = "reading the uploaded files took longer than the task's time limit"
        extraction.audit_refuse(audit_id, [PayloadTooLarge(reason, code="document_too_slow")])
