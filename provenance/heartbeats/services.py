"""Which workers are alive.

Each ``celery worker`` process registers a ``Worker`` row when it is ready and beats (updates
``beat_at``) every PROVENANCE_WORKER_HEARTBEAT seconds from a thread. A worker is known dead
when a new one starts under its node name (the same host restarted it) or when its beat is
older than PROVENANCE_WORKER_DEAD_AFTER. Which worker holds which check is the checks app's
record (``provenance.checks.services.claims``), written with this process's worker row.
"""

from __future__ import annotations

import logging
import os
import threading
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection
from django.utils import timezone

from provenance.heartbeats.models import Worker

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
