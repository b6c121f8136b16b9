"""The sweeper: the database is the source of truth, the broker only a delivery. Dead workers
are reaped and what is lost, and only that, is published again."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from provenance.audits.extraction import audit_extract_enqueue, audits_lost
from provenance.audits.services import audit_enqueue
from provenance.checks import queue
from provenance.checks.models import Check, Reading, Status
from provenance.checks.services.checks import check_enqueue
from provenance.checks.services.claims import checks_release_dead
from provenance.heartbeats.services import workers_reap
from provenance.metrics.services import SWEEPER_DEAD_WORKERS, SWEEPER_REQUEUED, tally_add

logger = logging.getLogger(__name__)


def checks_sweep(
    *, pending_after: float, running_after: float | None = None, dead_after: float | None = None
) -> dict[str, int]:
    """Queue again what is lost, and only that:

    - running checks of dead workers (a new worker took the node name, or the heartbeat is
      older than ``dead_after`` seconds): released to pending and queued at once;
    - pending checks the broker never got (queued_at empty, created a few seconds ago);
    - queued pending checks while nothing waits in the broker's queue and no worker holds
      them, ``pending_after`` seconds after their queuing (Redis restarted empty, or a
      worker died with the message in hand before it claimed the check). A check waiting
      behind a backlog is never taken for lost: the queue is not empty then;
    - running checks with no worker recorded, older than ``running_after`` (default
      PROVENANCE_SWEEP_RUNNING_AFTER, above every task's hard time limit);
    - audits whose uploaded files no task will read (``extraction.audits_lost``), counted
      with the lost checks;
    - readings still pending ``pending_after`` seconds after their check's model-free
      answer while nothing waits in the broker's queue (a lost publish, Redis restarted
      empty, a worker that died reading): published again (a second delivery stores
      nothing).

    Claims make a spurious re-queue cost a lookup, never a second result."""
    reaped = workers_reap(dead_after or settings.PROVENANCE_WORKER_DEAD_AFTER)
    released = checks_release_dead()
    now = timezone.now()
    lost = Q(status=Status.PENDING, queued_at__isnull=True) & (
        Q(created_at__lt=now - timedelta(seconds=min(pending_after, 5.0))) | Q(id__in=released)
    )
    backlog = queue.backlog()
    if backlog == 0:
        lost |= Q(status=Status.PENDING, queued_at__lt=now - timedelta(seconds=pending_after))
    stale = now - timedelta(seconds=running_after or settings.PROVENANCE_SWEEP_RUNNING_AFTER)
    lost |= Q(status=Status.RUNNING, worker__isnull=True, started_at__lt=stale)
    stuck = Check.objects.filter(lost).order_by("audit_id", "position")
    rows = list(stuck.values_list("id", "audit_id"))
    queued = _requeue(rows)
    if backlog == 0:
        queued += _readings_requeue(now - timedelta(seconds=pending_after))
    unread = audits_lost(pending_after, backlog)  # uploaded files no task will read
    queued += audit_extract_enqueue(unread) if unread else 0
    if rows or reaped or unread:
        tally_add(SWEEPER_REQUEUED, queued)  # for /metrics, whichever host sweeps
        tally_add(SWEEPER_DEAD_WORKERS, reaped)
        logger.info(
            "sweeper: %d worker(s) found dead, %d lost check(s), %d lost upload(s), "
            "%d queued again (backlog %s)",
            *(reaped, len(rows), len(unread), queued, backlog),
        )
    return {"dead_workers": reaped, "stuck": len(rows) + len(unread), "queued": queued}


def _readings_requeue(before: Any) -> int:
    """Publish again the readings of checks answered before ``before`` and still pending."""
    ids = Check.objects.filter(
        status=Status.DONE, reading=Reading.PENDING, finished_at__lt=before
    ).values_list("id", flat=True)
    return sum(bool(queue.publish(queue.READ_CHECK, str(cid))) for cid in ids)


def _requeue(rows: list[tuple[Any, Any]]) -> int:
    singles = [cid for cid, audit_id in rows if audit_id is None]
    by_audit: dict[Any, list[Any]] = {}
    for cid, audit_id in rows:
        if audit_id is not None:
            by_audit.setdefault(audit_id, []).append(cid)
    queued = check_enqueue(singles) if singles else 0
    for audit_id, ids in by_audit.items():
        queued += audit_enqueue(audit_id, ids)
    return queued
