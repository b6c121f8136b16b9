"""Retention and deletion of submitted texts (student essays, unpublished manuscripts).

A text is kept for its team's retention period (``PROVENANCE_RETENTION_DAYS``, 30 by
default; a team may shorten it). Then ``checks_purge`` (``manage.py checks_purge``, the
sweeper, ``make run``'s runner) removes the text and its per-token data; the verdict, the
p-values, the text's SHA-256 and the detection log stay. The submitter or a team admin may
delete a check or an audit at once: the same purge, and the row is hidden (404) from then on.

The other texts the server keeps follow the same periods: playground messages (prompts and
replies) older than the period are deleted, and their conversation's title (the first
prompt) with them; detection streams (their state holds the text's token contexts) opened
before it are deleted, and a later append answers 404.
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
from provenance.audits.models import Audit
from provenance.audits.selectors import audit_get
from provenance.checks import selectors
from provenance.checks.models import Check, Status, Upload
from provenance.errors import ProblemError
from provenance.playground.models import Conversation, Message
from provenance.streams.models import Stream

logger = logging.getLogger(__name__)

PURGED_BEFORE_SCORING = "the text was deleted before it was scored"


def retention_days(team: Team) -> int:
    """The team's period, never longer than the deployment's."""
    default = settings.PROVENANCE_RETENTION_DAYS
    return min(team.retention_days or default, default)


def checks_purge(*, now: datetime | None = None) -> int:
    """Purge every check, playground message and stream older than its team's retention
    period; returns how many rows were purged or deleted."""
    now = now or timezone.now()
    counts = {"checks": 0, "messages": 0, "streams": 0}
    for in_team, cutoff in _cutoffs(now):
        checks = Check.objects.filter(created_at__lt=cutoff, **in_team)
        counts["checks"] += _purge(checks, now)
        counts["messages"] += _messages_purge(cutoff, in_team)
        streams = Stream.objects.filter(created_at__lt=cutoff, **in_team)
        counts["streams"] += streams.delete()[0] if streams.exists() else 0
    if any(counts.values()):
        logger.info(
            "retention: purged %(checks)d check(s), deleted %(messages)d playground "
            "message(s) and %(streams)d stream(s)",
            counts,
        )
    return sum(counts.values())


def _cutoffs(now: datetime) -> list[tuple[dict[str, Any], datetime]]:
    """(team filter, cutoff): the teams with a shorter period first, then everyone."""
    default = settings.PROVENANCE_RETENTION_DAYS
    shorter = Team.objects.filter(retention_days__lt=default)
    cutoffs = [({"team": team}, now - timedelta(days=retention_days(team))) for team in shorter]
    return [*cutoffs, ({}, now - timedelta(days=default))]


def _messages_purge(cutoff: datetime, in_team: dict[str, Any]) -> int:
    """Delete playground messages older than ``cutoff``; a conversation that lost some
    loses its title too (its first prompt), and one left empty goes."""
    scope = {f"conversation__{name}": value for name, value in in_team.items()}
    old = Message.objects.filter(created_at__lt=cutoff, **scope)
    if not old.exists():  # read first: no write lock on a pass with nothing to do
        return 0
    with transaction.atomic():
        touched = set(old.values_list("conversation_id", flat=True))
        deleted = old.delete()[0]
        Conversation.objects.filter(id__in=touched).update(title="")
        Conversation.objects.filter(id__in=touched, messages__isnull=True).delete()
    return deleted


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
    audit = audit_get(user, audit_id)
    if not selectors.may_delete(user, audit):
        raise ProblemError("only the submitter or a team admin may delete this audit", 403)
    now = timezone.now()
    with transaction.atomic():
        _purge(Check.objects.filter(audit=audit), now)
        Check.objects.filter(audit=audit).update(deleted_at=now)
        Audit.objects.filter(id=audit.id).update(deleted_at=now)
        Upload.objects.filter(audit=audit).delete()  # files not read yet


def _purge(checks: QuerySet[Check], now: datetime) -> int:
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
