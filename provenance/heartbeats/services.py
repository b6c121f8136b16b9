"""Which worker holds which check, and which workers are alive.

Each ``celery worker`` process registers a ``Worker`` row when it is ready and beats (updates
``beat_at``) every PROVENANCE_WORKER_HEARTBEAT seconds from a thread. A worker is known dead
when a new one starts under its node name (the same host restarted it) or when its beat is
older than PROVENANCE_WORKER_DEAD_AFTER. A task claims its checks (status "running", this
worker, this message) with one conditional UPDATE, so two deliveries of one check never
both score it, and the checks of a dead worker can be queued again at once.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection
from django.db.models import Q
from django.utils import timezone

from provenance.checks.models import Check, Status, Worker
from provenance.lib import precompiled

logger = logging.getLogger(__name__)

_current: Worker | None = None


def current_worker() -> Worker | None:
    """This process's worker row (None outside a worker, e.g. in tests calling services)."""
    return _current


def worker_start(nodename: str) -> tuple[Worker, int]:
    """Register this process as a live worker; a live-looking worker of the same node name is
    the one this process replaces: it is marked dead. Returns (worker, how many replaced)."""
    global _current
    now = timezone.now()
    replaced = Worker.objects.filter(nodename=nodename, dead_at__isnull=True).update(dead_at=now)
    _current = Worker.objects.create(
        nodename=nodename, pid=os.getpid(), started_at=now, beat_at=now
    )
    return _current, replaced


def worker_beat(worker: Worker) -> None:
    """Say this worker is alive. One that was taken for dead (a long database stall) lives
    again: its claims may have been queued twice, which the claim rule makes harmless."""
    now = timezone.now()
    if not Worker.objects.filter(id=worker.id).update(beat_at=now, dead_at=None):
        # The row was purged meanwhile: write it again (same id: the claims refer to it).
        worker.beat_at, worker.dead_at = now, None
        worker.save(force_insert=True)


def worker_stop(worker: Worker) -> None:
    """A clean shutdown: the worker is dead now, not after its heartbeat times out."""
    Worker.objects.filter(id=worker.id).update(dead_at=timezone.now())


def workers_reap(dead_after: float) -> int:
    """Mark dead the workers whose last beat is older than ``dead_after`` seconds."""
    now = timezone.now()
    silent = Worker.objects.filter(
        dead_at__isnull=True, beat_at__lt=now - timedelta(seconds=dead_after)
    )
    return silent.update(dead_at=now)


def checks_claim(
    check_ids: Sequence[Any], claim: str, fields: Sequence[str] = ("id",), **scope: Any
) -> list[Check]:
    """Mark as running, held by this worker under ``claim`` (the task message's id), those of
    ``check_ids`` (narrowed by ``scope`` filters) that are free to take: pending ones, running
    ones under this same claim (the message was delivered again after its worker process
    died) and running ones older than PROVENANCE_SWEEP_RUNNING_AFTER (above every task's
    hard time limit: their holder is gone). Returns the checks now held under ``claim``
    (only ``fields`` loaded), ordered by id.

    One UPDATE whose conditions read only the row itself: on PostgreSQL a second claimer
    waits for the row lock and re-evaluates them on the committed row, so exactly one wins;
    on SQLite writers are serialized outright.
    """
    now = timezone.now()
    stale = now - timedelta(seconds=settings.PROVENANCE_SWEEP_RUNNING_AFTER)
    free = (
        Q(status=Status.PENDING)
        | Q(status=Status.RUNNING, claim=claim)
        | Q(status=Status.RUNNING, started_at__lt=stale)
    )
    Check.objects.filter(Q(id__in=check_ids, **scope) & free).update(
        status=Status.RUNNING, worker=current_worker(), claim=claim, started_at=now
    )
    # Read with a statement compiled once per thread and shape (provenance.lib.precompiled):
    # every task runs this read.
    ids = [precompiled.prepared(Check, "id", check_id) for check_id in check_ids]
    return precompiled.objects(
        ("checks_claim", len(ids), tuple(fields)),
        lambda: held(check_ids, claim).order_by("id").only(*fields),
        (*ids, Status.RUNNING, claim),
    )


def held(check_ids: Sequence[Any], claim: str) -> Any:
    """The checks of ``check_ids`` still held under ``claim`` (a queryset)."""
    return Check.objects.filter(id__in=check_ids, status=Status.RUNNING, claim=claim)


def checks_release_dead() -> list[Any]:
    """Put back to "pending, never queued" the running checks of dead workers; returns their
    ids (the caller queues them). A stalled worker taken for dead that wakes up finds its
    claim gone and stores nothing."""
    dead = Check.objects.filter(status=Status.RUNNING, worker__dead_at__isnull=False)
    rows = list(dead.values_list("id", "worker_id"))
    if not rows:
        return []
    ids, workers = [cid for cid, _ in rows], {wid for _, wid in rows}
    # Conditions on the row itself (not a join), re-checked under PostgreSQL's row lock.
    Check.objects.filter(id__in=ids, status=Status.RUNNING, worker_id__in=workers).update(
        status=Status.PENDING, worker=None, claim="", queued_at=None, started_at=None
    )
    return ids


class Heartbeat(threading.Thread):
    """Beats for ``worker`` every ``every`` seconds until ``stop()``. A beat that fails (the
    database is down or locked) is retried at the next tick; the worker carries on."""

    def __init__(self, worker: Worker, every: float | None = None) -> None:
        super().__init__(name="provenance-heartbeat", daemon=True)
        self.worker = worker
        self.every = every or settings.PROVENANCE_WORKER_HEARTBEAT
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            try:
                close_old_connections()
                worker_beat(self.worker)
            except DatabaseError as exc:
                logger.warning("heartbeat failed (%s); retrying", type(exc).__name__)
        connection.close()

    def stop(self) -> None:
        self.stopped.set()
