"""Retention and deletion of submitted texts (student essays, unpublished manuscripts).

A text is kept for its team's retention period (``PROVENANCE_RETENTION_DAYS``, 30 by
default; a team may shorten it). Then ``checks_purge`` (``manage.py checks_purge``, the
sweeper, ``make run``'s runner) removes the text and its per-token data; the verdict, the
p-values, the text's SHA-256 and the detection log stay. The submitter or a team admin may
delete a check or an audit at once: the same purge, and the row is hidden (404) from then on.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from provenance.accounts.models import Team
from provenance.checks import selectors
from provenance.checks.models import Audit, Check, Status
from provenance.errors import ProblemError

logger = logging.getLogger(__name__)

PURGED_BEFORE_SCORING = "the text was deleted before it was scored"


def retention_days(team: Team) -> int:
    """The team's period, never longer than the deployment's."""
    default = settings.PROVENANCE_RETENTION_DAYS
    return min(team.retention_days or default, default)


def checks_purge(*, now: datetime | None = None) -> int:
    """Purge every check older than its team's retention period; returns how many."""
    now = now or timezone.now()
    default = settings.PROVENANCE_RETENTION_DAYS
    purged = 0
    for team in Team.objects.filter(retention_days__lt=default):
        cutoff = now - timedelta(days=retention_days(team))
        purged += _purge(Check.objects.filter(team=team, created_at__lt=cutoff), now)
    purged += _purge(Check.objects.filter(created_at__lt=now - timedelta(days=default)), now)
    if purged:
        logger.info("retention: purged the text of %d check(s)", purged)
    return purged


def check_delete(*, user: User, check_id: Any) -> None:
    """Purge and hide one check (404 for whoever cannot see it, 403 for a team member who
    is neither its submitter nor a team admin)."""
    check = selectors.check_get(user, check_id)
    if not selectors.may_delete(user, check):
        raise ProblemError("only the submitter or a team admin may delete this check", 403)
    now = timezone.now()
    with transaction.atomic():
        _purge(Check.objects.filter(id=check.id), now)
        Check.objects.filter(id=check.id).update(deleted_at=now)


def audit_delete(*, user: User, audit_id: Any) -> None:
    """Purge and hide an audit with all its checks (same permissions as a check)."""
    audit = selectors.audit_get(user, audit_id)
    if not selectors.may_delete(user, audit):
        raise ProblemError("only the submitter or a team admin may delete this audit", 403)
    now = timezone.now()
    with transaction.atomic():
        _purge(Check.objects.filter(audit=audit), now)
        Check.objects.filter(audit=audit).update(deleted_at=now)
        Audit.objects.filter(id=audit.id).update(deleted_at=now)


def _purge(checks: QuerySet[Check], now: datetime) -> int:
    """Text and per-token data go; verdict, p-values, hypotheses and text_sha256 stay. A
    check not scored yet is failed first, so no task scores an empty text."""
    todo = checks.filter(purged_at__isnull=True)
    # A read first: the sweeper calls this every few seconds, and an UPDATE that matches
    # nothing would still take SQLite's write lock (IMMEDIATE transactions).
    if not todo.exists():
        return 0
    with transaction.atomic():
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
