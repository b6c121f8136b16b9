"""Purging a check's text: the text and per-token data go; the verdict, p-values,
hypotheses and text's SHA-256 stay. Retention (``provenance.retention``) purges by age, the
submitter or a team admin deletes a check (here) or an audit (``provenance.audits``) at once,
and the row is hidden (404) from then on."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from provenance.checks import selectors
from provenance.checks.models import Check, Status, Upload
from provenance.errors import ProblemError

PURGED_BEFORE_SCORING = "the text was deleted before it was scored"


def check_delete(*, user: User, check_id: Any) -> None:
    """Purge and hide one check (404 for whoever cannot see it, 403 for a team member who
    is neither its submitter nor a team admin)."""
    check = selectors.check_get(user, check_id)
    if not selectors.may_delete(user, check):
        raise ProblemError("only the submitter or a team admin may delete this check", 403)
    now = timezone.now()
    with transaction.atomic():
        texts_purge(Check.objects.filter(id=check.id), now)
        Check.objects.filter(id=check.id).update(deleted_at=now)


def texts_purge(checks: QuerySet[Check], now: datetime) -> int:
    """Text and per-token data go; verdict, p-values, hypotheses and text_sha256 stay. A
    check not scored yet is failed first, so no task scores an empty text."""
    todo = checks.filter(purged_at__isnull=True)
    # A read first: the sweeper calls this every few seconds, and an UPDATE that matches
    # nothing would still take SQLite's write lock (IMMEDIATE transactions).
    if not todo.exists():
        return 0
    with transaction.atomic():
        Upload.objects.filter(check_run__in=todo).delete()  # a document not read yet
        todo.exclude(status__in=[Status.DONE, Status.FAILED]).update(
            status=Status.FAILED, failure_reason=PURGED_BEFORE_SCORING, finished_at=now
        )
        return todo.update(text="", token_data=None, heatmap_compact=None, purged_at=now)


def purged_cleanup(check_ids: list[Any]) -> None:
    """Called after results are stored: a check purged while it was being scored must not
    get its per-token data back from the task that was already running."""
    Check.objects.filter(id__in=check_ids, purged_at__isnull=False).update(
        token_data=None, heatmap_compact=None
    )
