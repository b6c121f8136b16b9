"""Reads for audits; every query is scoped to the caller's team."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Case, Count, F, IntegerField, Q, QuerySet, Value, When
from django.http import Http404
from django.utils import timezone

from provenance.accounts.selectors import team_for_user
from provenance.audits.models import Audit
from provenance.checks.exports import export_row
from provenance.checks.models import Check, Status, Verdict
from provenance.errors import ProblemError


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


# The results' filters (``?verdict=``), as the counts count them.
_DONE = Q(status=Status.DONE)
VERDICT_FILTERS = {
    "watermarked": Q(is_watermarked=True),
    "not_watermarked": _DONE & Q(verdict=Verdict.NOT_WATERMARKED),
    "inconclusive": _DONE & Q(verdict=Verdict.INCONCLUSIVE),
    "failed": Q(status=Status.FAILED),
    "open": Q(status__in=[Status.PENDING, Status.RUNNING]),
}
# The results' orders (``?sort=``, ``-`` first for the reverse), each ending on the text's
# position so that pages never overlap; texts without a value (not scored yet) come last.
SORTS = ("position", "name", "verdict", "p_value", "scored")
_SORT_FIELDS = {"name": "client_id", "p_value": "log10_p", "scored": "num_scored_tokens"}
# watermarked first, then inconclusive, then not watermarked, then failed or waiting
_VERDICT_RANK = Case(
    When(is_watermarked=True, then=Value(0)),
    When(_DONE & Q(verdict=Verdict.INCONCLUSIVE), then=Value(1)),
    When(_DONE & Q(verdict=Verdict.NOT_WATERMARKED), then=Value(2)),
    When(status=Status.DONE, then=Value(3)),
    default=Value(4),
    output_field=IntegerField(),
)


def results_query(params: Any, strict: bool = False) -> tuple[str, str]:
    """``(verdict, sort)`` from query parameters; an unknown value is dropped (a bookmarked
    page still opens), or refused with a 400 when ``strict`` (the API)."""
    verdict, sort = params.get("verdict", "") or "", params.get("sort", "") or ""
    if verdict and verdict not in VERDICT_FILTERS:
        if strict:
            raise ProblemError(f"verdict must be one of {', '.join(VERDICT_FILTERS)}")
        verdict = ""
    if sort and sort.removeprefix("-") not in SORTS:
        if strict:
            raise ProblemError(f"sort must be one of {', '.join(SORTS)}, optionally after -")
        sort = ""
    return verdict, sort


def audit_items(audit: Audit, verdict: str = "", sort: str = "") -> QuerySet[Check]:
    """An audit's texts, filtered by ``verdict`` (a ``VERDICT_FILTERS`` name) and ordered by
    ``sort`` (a ``SORTS`` name, ``-`` first for the reverse; submission order by default)."""
    items = _live_items(audit).select_related("best_key")
    if verdict:
        items = items.filter(VERDICT_FILTERS[verdict])
    name = sort.removeprefix("-") or "position"
    descending = sort.startswith("-")
    if name == "verdict":
        items = items.annotate(verdict_rank=_VERDICT_RANK)
    field = F("verdict_rank" if name == "verdict" else _SORT_FIELDS.get(name, "position"))
    first = field.desc(nulls_last=True) if descending else field.asc(nulls_last=True)
    tie = F("position").desc() if descending and name == "position" else F("position").asc()
    return items.order_by(first, tie)


# The columns of the results table: a page of 100 rows reads these, not the texts and their
# per-token data (about 45 kB a text of 1,300 tokens).
TABLE_COLUMNS = (
    "id",
    "audit_id",
    "position",
    "client_id",
    "status",
    "failure_reason",
    "verdict",
    "is_watermarked",
    "log10_p",
    "p_value",
    "num_scored_tokens",
    "key_ids",
    "best_key__name",
)


def audit_log10_ps(audit: Audit) -> list[float]:
    """Every scored text's corrected log10 p (10,000 floats at most), for the summary's
    chart."""
    values = _live_items(audit).filter(status=Status.DONE, log10_p__isnull=False)
    return [float(v) for v in values.values_list("log10_p", flat=True) if v is not None]


def audit_progress(audit: Audit) -> dict[str, Any]:
    """How far the audit is: its counts, the seconds since it was submitted (until it
    finished) and an estimate of the seconds left (the pace so far; None before any text
    finished)."""
    counts = audit_counts(audit)
    end = audit.finished_at or timezone.now()
    elapsed = max((end - audit.created_at).total_seconds(), 0.0)
    finished = counts["done"] + counts["failed"]
    remaining = None
    if counts["open"] == 0:
        remaining = 0.0
    elif finished:
        remaining = elapsed * counts["open"] / finished
    return {
        "status": audit.status,
        "total": audit.num_texts,
        "finished": finished,
        "elapsed_s": round(elapsed, 1),
        "remaining_s": None if remaining is None else round(remaining, 1),
        "counts": counts,
    }


# What the API and pages say while an audit's checks wait for the broker (it was down when they
# were submitted; the sweeper publishes them once the broker is back).
AUDIT_WAITING = (
    "the scoring queue is unavailable; its checks wait as pending and are scored when the "
    "queue is back"
)


def audit_export_rows(audit: Audit, verdict: str = "", sort: str = "") -> Iterator[dict[str, Any]]:
    """One flat dict per text (``provenance.checks.exports.export_row``), filtered and
    ordered as ``audit_items`` (submission order by default; streamed: audits reach 10,000
    rows)."""
    for check in audit_items(audit, verdict, sort).iterator(chunk_size=1000):
        yield export_row(check)


def audit_queue_notice(audit: Audit) -> str:
    if audit.status == Status.PENDING and not audit.num_texts:  # its files wait to be read
        unread = audit.uploads.filter(queued_at__isnull=True)
        return AUDIT_WAITING if unread.exists() else ""
    waiting = audit.checks.filter(status=Status.PENDING, queued_at__isnull=True)
    return AUDIT_WAITING if waiting.exists() else ""


def audit_reading(audit: Audit) -> dict[str, Any]:
    """What the tokenizer's model read of an audit: texts read, texts that kept their
    model-free verdict past the team's daily reading budget (reading "skipped"), the seconds
    read, and the team's budget and what its audits spent of it today."""
    from django.conf import settings
    from django.db.models import Count, Q, Sum
    from django.utils import timezone

    got = Check.objects.filter(audit_id=audit.id).aggregate(
        read=Count("id", filter=Q(reading="done")),
        skipped=Count("id", filter=Q(reading="skipped")),
        ms=Sum("reading_ms", filter=Q(reading="done")),
    )
    start = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    today = Check.objects.filter(
        audit__team_id=audit.team_id, reading="done", finished_at__gte=start
    ).aggregate(ms=Sum("reading_ms"))["ms"]
    return {
        "read": got["read"],
        "skipped": got["skipped"],
        "seconds": round(float(got["ms"] or 0.0) / 1000.0, 1),
        "team_today": round(float(today or 0.0) / 1000.0, 1),
        "budget": settings.PROVENANCE_AUDIT_READING_SECONDS,
    }
