"""Retention and deletion of submitted texts (student essays, unpublished manuscripts).

A text is kept for its team's retention period (``PROVENANCE_RETENTION_DAYS``, 30 by
default; a team may shorten it). Then ``checks_purge`` (``manage.py checks_purge``, the
sweeper, ``make run``'s runner) removes the text and its per-token data; the verdict, the
p-values, the text's SHA-256 and the detection log stay. The submitter or a team admin may
delete a check or an audit at once: the same purge (``provenance.checks.services.deletion``),
and the row is hidden (404) from then on.

The other texts the server keeps follow the same periods: playground messages (prompts and
replies) older than the period are deleted, and their conversation's title (the first
prompt) with them; detection streams (their state holds the text's token contexts) opened
before it are deleted, and a later append answers 404. The C2PA manifests the soft binding
resolution API keeps (each holds its asset's hash) go after the deployment's period.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from provenance.accounts.models import Team
from provenance.checks.models import Check
from provenance.checks.services.deletion import texts_purge
from provenance.playground.models import Conversation, Message
from provenance.softbinding.models import Manifest
from provenance.streams.models import Stream

logger = logging.getLogger(__name__)


def retention_days(team: Team) -> int:
    """The team's period, never longer than the deployment's."""
    default = settings.PROVENANCE_RETENTION_DAYS
    return min(team.retention_days or default, default)


def checks_purge(*, now: datetime | None = None) -> int:
    """Purge every check, playground message and stream older than its team's retention
    period, and every kept C2PA manifest older than the deployment's; returns how many rows
    were purged or deleted."""
    now = now or timezone.now()
    counts = {"checks": 0, "messages": 0, "streams": 0, "manifests": 0}
    for in_team, cutoff in _cutoffs(now):
        checks = Check.objects.filter(created_at__lt=cutoff, **in_team)
        counts["checks"] += texts_purge(checks, now)
        counts["messages"] += _messages_purge(cutoff, in_team)
        streams = Stream.objects.filter(created_at__lt=cutoff, **in_team)
        counts["streams"] += streams.delete()[0] if streams.exists() else 0
    old = Manifest.objects.filter(
        created_at__lt=now - timedelta(days=settings.PROVENANCE_RETENTION_DAYS)
    )
    counts["manifests"] = old.delete()[0] if old.exists() else 0
    if any(counts.values()):
        logger.info(
            "retention: purged %(checks)d check(s), deleted %(messages)d playground "
            "message(s), %(streams)d stream(s) and %(manifests)d C2PA manifest(s)",
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
