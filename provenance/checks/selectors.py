"""Reads for checks and audits; every query is scoped to the caller's team."""

from __future__ import annotations

import time
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Count, Q, QuerySet
from django.http import Http404
from django.utils import timezone

from provenance.accounts.models import Membership
from provenance.accounts.selectors import team_for_user
from provenance.checks.models import Audit, Check, QuotaUsage, Status, Verdict


def checks_for_user(user: User) -> QuerySet[Check]:
    """Single checks of the user's team (audit items are listed under their audit)."""
    team = team_for_user(user)
    if team is None:
        return Check.objects.none()
    return Check.objects.filter(
        team=team, audit__isnull=True, deleted_at__isnull=True
    ).select_related("best_key")


def check_get(user: User, check_id: Any) -> Check:
    team = team_for_user(user)
    check = (
        Check.objects.filter(id=check_id, team=team, deleted_at__isnull=True)
        # 1.5 MB of JSON on a 45k-token text: loaded only where asked for (?tokens=1).
        .defer("token_data")
        .select_related("best_key", "submitted_by")
        .prefetch_related("hypotheses")
        .first()
        if team is not None
        else None
    )
    if check is None:
        raise Http404("no such check")
    return check


def check_finished(check_id: Any, *, within: float, every: float = 0.01) -> bool:
    """Whether the check is done or failed, waiting up to ``within`` seconds for its worker
    (the API's ``?wait=``): one indexed read after ``every`` seconds, then ever less often
    (x1.5 each time, at most every 0.25 s: a slow worker costs the web few reads)."""
    deadline = time.monotonic() + within
    finished = Check.objects.filter(id=check_id, status__in=[Status.DONE, Status.FAILED])
    while not finished.exists():
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(every, left))
        every = min(every * 1.5, 0.25)
    return True


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


def may_delete(user: User, row: Check | Audit) -> bool:
    """The submitter or an admin of the row's team (who can see it: selectors checked)."""
    if row.submitted_by_id == user.pk:
        return True
    return Membership.objects.filter(user=user, team_id=row.team_id, is_admin=True).exists()


EXPORT_FIELDS = [
    "client_id",
    "status",
    "is_watermarked",
    "verdict",
    "verdict_reason",
    "verdict_tokens_needed",
    "p_value",
    "log10_p",
    "decided_by",
    "num_hypotheses",
    "best_key",
    "num_tokens",
    "num_scored_tokens",
    "key_fpr_above_threshold",
    "num_spans",
    "longest_span_start_char",
    "longest_span_end_char",
    "failure_reason",
]


def audit_export_rows(audit: Audit) -> Any:
    """One flat dict per text, in submission order (streamed: audits reach 10,000 rows)."""
    for check in audit_items(audit).iterator(chunk_size=1000):
        yield {
            "client_id": check.client_id,
            "status": check.status,
            "is_watermarked": check.is_watermarked,
            "verdict": check.verdict,
            "verdict_reason": check.verdict_reason,
            "verdict_tokens_needed": check.verdict_tokens_needed,
            "p_value": check.p_value,
            "log10_p": check.log10_p,
            "decided_by": check.decided_by,
            "num_hypotheses": check.num_hypotheses,
            "best_key": check.best_key.name if check.best_key else None,
            "num_tokens": check.num_tokens,
            "num_scored_tokens": check.num_scored_tokens,
            "key_fpr_above_threshold": key_fpr_above_threshold(check),
            **longest_span(check.spans or []),
            "failure_reason": check.failure_reason,
        }


def key_fpr_above_threshold(check: Check) -> bool | None:
    """Whether the best key's measured false-positive rate, as stored when the check was
    scored, lay above the threshold on some genre (None: the key was not calibrated then)."""
    measured = check.key_measured_fpr
    return None if measured is None else bool(measured["above_threshold"])


def longest_span(spans: list[dict[str, Any]]) -> dict[str, Any]:
    """The number of spans and the character range of the longest (None without spans)."""
    longest = max(spans, key=lambda s: s["end_char"] - s["start_char"], default=None)
    return {
        "num_spans": len(spans),
        "longest_span_start_char": longest["start_char"] if longest else None,
        "longest_span_end_char": longest["end_char"] if longest else None,
    }


# What the API and pages say while work waits for the broker (it was down when the work was
# submitted; the sweeper publishes it once the broker is back).
CHECK_WAITING = (
    "the scoring queue is unavailable; the check waits as pending and is scored when the "
    "queue is back"
)
AUDIT_WAITING = (
    "the scoring queue is unavailable; its checks wait as pending and are scored when the "
    "queue is back"
)


def queue_notice(check: Check) -> str:
    return CHECK_WAITING if check.status == Status.PENDING and check.queued_at is None else ""


def audit_queue_notice(audit: Audit) -> str:
    waiting = audit.checks.filter(status=Status.PENDING, queued_at__isnull=True)
    return AUDIT_WAITING if waiting.exists() else ""


def quota_used_today(user: User) -> int:
    """Texts the user submitted to the detector since midnight UTC (the quota's counter)."""
    day = timezone.now().date()
    used = QuotaUsage.objects.filter(user=user, day=day).values_list("used", flat=True)
    return int(next(iter(used), 0))
