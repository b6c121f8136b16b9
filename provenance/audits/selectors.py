"""Reads for audits; every query is scoped to the caller's team."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Count, Q, QuerySet
from django.http import Http404

from provenance.accounts.selectors import team_for_user
from provenance.checks.exports import export_row
from provenance.checks.models import Audit, Check, Status, Verdict


def audits_for_user(user: User) -> QuerySet[Audit]:
    team = team_for_user(user)
    if team is None:
        return Audit.objects.none()
    return Audit.objects.filter(team=team, deleted_at__isnull=True)


def audit_get(user: User, audit_id: Any) -> Audit:
    audit = audits_for_user(user).filter(id=audit_id).first()
    if audit is None:
        raise Http404("no such audit")
    return audit


def audit_counts(audit: Audit) -> dict[str, int]:
    """Texts by status, and the finished ones by three-way verdict. ``watermarked`` counts
    ``is_watermarked`` (the same texts as the watermarked verdict; texts scored before the
    verdict was stored have only that), so not every done text of an old audit is in one of
    the three."""
    done = Q(status=Status.DONE)
    counts = _live_items(audit).aggregate(
        done=Count("id", filter=done),
        failed=Count("id", filter=Q(status=Status.FAILED)),
        open=Count("id", filter=Q(status__in=[Status.PENDING, Status.RUNNING])),
        watermarked=Count("id", filter=Q(is_watermarked=True)),
        not_watermarked=Count("id", filter=done & Q(verdict=Verdict.NOT_WATERMARKED)),
        inconclusive=Count("id", filter=done & Q(verdict=Verdict.INCONCLUSIVE)),
    )
    return {name: int(value or 0) for name, value in counts.items()}


def _live_items(audit: Audit) -> QuerySet[Check]:
    return audit.checks.filter(deleted_at__isnull=True)


def audit_items(audit: Audit) -> QuerySet[Check]:
    return _live_items(audit).order_by("position").select_related("best_key")


# What the API and pages say while an audit's checks wait for the broker (it was down when they
# were submitted; the sweeper publishes them once the broker is back).
AUDIT_WAITING = (
    "the scoring queue is unavailable; its checks wait as pending and are scored when the "
    "queue is back"
)


def audit_export_rows(audit: Audit) -> Iterator[dict[str, Any]]:
    """One flat dict per text (``provenance.checks.exports.export_row``), in submission order
    (streamed: audits reach 10,000 rows)."""
    for check in audit_items(audit).iterator(chunk_size=1000):
        yield export_row(check)


def audit_queue_notice(audit: Audit) -> str:
    waiting = audit.checks.filter(status=Status.PENDING, queued_at__isnull=True)
    return AUDIT_WAITING if waiting.exists() else ""
