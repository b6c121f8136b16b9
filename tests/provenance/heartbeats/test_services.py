"""Which workers are alive: registration under a node name, the heartbeat, the reaping of
silent ones (who holds a check: tests/provenance/checks/services/test_claims.py)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from provenance.heartbeats import services as workers
from provenance.heartbeats.models import Worker


def test_a_worker_started_under_a_live_name_replaces_the_old_one(db):
    old, _ = workers.worker_start("w1@host")
    new, replaced = workers.worker_start("w1@host")
    other, _ = workers.worker_start("w2@host")
    assert replaced == 1
    assert Worker.objects.get(id=old.id).dead_at is not None
    assert Worker.objects.get(id=new.id).dead_at is None
    assert Worker.objects.get(id=other.id).dead_at is None


def test_a_heartbeat_keeps_a_worker_alive_and_brings_back_a_purged_row(db):
    worker, _ = workers.worker_start("beat@host")
    Worker.objects.filter(id=worker.id).update(beat_at=timezone.now() - timedelta(seconds=60))
    workers.worker_beat(worker)
    assert workers.workers_reap(dead_after=10) == 0
    Worker.objects.filter(id=worker.id).delete()
    workers.worker_beat(worker)
    assert Worker.objects.filter(id=worker.id, dead_at__isnull=True).exists()
