"""The sweeper: the database is the source of truth, the broker only a delivery. What the
broker lost (Redis restarted empty, a worker killed mid-task) is published again."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.db.models import Q
from django.utils import timezone

from provenance.checks.models import Check, Status
from provenance.checks.services.audits import audit_enqueue
from provenance.checks.services.checks import check_enqueue

logger = logging.getLogger(__name__)


def checks_sweep(*, pending_after: float, running_after: float) -> dict[str, int]:
    """Queue again pending checks never queued or queued longer ago than ``pending_after``
    seconds, and running checks whose worker died (started longer ago than
    ``running_after``, which settings keep above the tasks' hard time limits). Tasks store
    results once, so a spurious re-queue costs a lookup, never a second result."""
    now = timezone.now()
    stale_pending = Q(status=Status.PENDING) & (
        Q(queued_at__isnull=True, created_at__lt=now - timedelta(seconds=min(pending_after, 5.0)))
        | Q(queued_at__lt=now - timedelta(seconds=pending_after))
    )
    stale_running = Q(status=Status.RUNNING, started_at__lt=now - timedelta(seconds=running_after))
    stuck = Check.objects.filter(stale_pending | stale_running)
    rows = list(stuck.order_by("audit_id", "position").values_list("id", "audit_id"))
    singles = [cid for cid, audit_id in rows if audit_id is None]
    by_audit: dict[Any, list[Any]] = {}
    for cid, audit_id in rows:
        if audit_id is not None:
            by_audit.setdefault(audit_id, []).append(cid)
    queued = check_enqueue(singles) if singles else 0
    for audit_id, ids in by_audit.items():
        queued += audit_enqueue(audit_id, ids)
    if rows:
        logger.info("sweeper: %d stuck check(s), %d queued again", len(rows), queued)
    return {"stuck": len(rows), "queued": queued}
