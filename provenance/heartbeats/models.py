"""The Celery workers and their heartbeats."""

from __future__ import annotations

import uuid

from django.db import models


class Worker(models.Model):
    """A Celery worker process (one per ``celery worker`` command, all its pool processes
    included). Its heartbeat tells live workers from dead ones, so the checks a dead worker
    held are queued again at once instead of after a timeout."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Celery's node name (``-n``): a worker started under the name of a live-looking one
    # replaces it (the same host restarted its worker), so the old one is dead.
    nodename = models.CharField(max_length=200, db_index=True)
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    beat_at = models.DateTimeField(db_index=True)
    dead_at = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        db_table = "checks_worker"  # created by the checks app; the rows stay where they are
        ordering = ["-started_at"]

    def __str__(self) -> str:
        state = "dead" if self.dead_at else "alive"
        return f"{self.nodename} pid {self.pid} ({state})"
