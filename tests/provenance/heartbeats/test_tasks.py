"""A worker's life through its Celery signals: registered at init (replacing a live-looking
worker of the same node name), beating once ready, marked stopped at shutdown (what the
replaced worker held: tests/provenance/sweeper/test_tasks.py)."""

from __future__ import annotations

from celery.signals import worker_init, worker_ready, worker_shutdown
from django.test import override_settings

from provenance.heartbeats import services as workers
from provenance.heartbeats import tasks
from provenance.heartbeats.models import Worker
from tests.provenance.heartbeats.workers import CeleryNode


@override_settings(PROVENANCE_WORKER_HEARTBEAT=3600)  # no beat from the thread in a test
def test_a_worker_is_registered_beats_and_is_stopped(no_current_worker, db):
    worker_init.send(sender=CeleryNode())
    worker = workers.current_worker()
    assert worker is not None and worker.nodename == "celery@box" and worker.dead_at is None
    worker_ready.send(sender=CeleryNode())
    assert tasks._heartbeat is not None and tasks._heartbeat.is_alive()
    assert tasks._heartbeat.worker == worker
    worker_shutdown.send(sender=CeleryNode())
    tasks._heartbeat.join(5)
    assert not tasks._heartbeat.is_alive()
    assert Worker.objects.get(id=worker.id).dead_at is not None


def test_readiness_outside_a_registered_worker_starts_no_heartbeat(no_current_worker, db):
    worker_ready.send(sender=CeleryNode())
    assert tasks._heartbeat is None
