"""The sweeper's part in a worker's start: once ready, the worker queues again at once what
the worker it replaced held (the handler is connected as the worker connects it, by importing
the apps' tasks)."""

from __future__ import annotations

from celery.signals import worker_init, worker_ready
from django.db import DatabaseError
from django.test import override_settings

from provenance.checks.models import Check, Status
from provenance.checks.services import check_create
from provenance.checks.services.claims import checks_claim
from provenance.heartbeats import services as workers
from provenance.heartbeats.models import Worker
from provenance.sweeper import tasks
from tests.provenance.heartbeats.workers import CeleryNode


@override_settings(PROVENANCE_WORKER_HEARTBEAT=3600)
def test_a_replacing_worker_queues_again_what_the_replaced_one_held(
    no_current_worker, cast, alice_key
):
    old, _ = workers.worker_start("celery@box")
    check = check_create(user=cast["alice"], text="held by a worker that died")
    checks_claim([check.id], "old-claim")
    assert Check.objects.get(id=check.id).worker_id == old.id
    worker_init.send(sender=CeleryNode())  # the same node name: the old one is dead
    assert Worker.objects.get(id=old.id).dead_at is not None
    worker_ready.send(sender=CeleryNode())
    released = Check.objects.get(id=check.id)
    assert released.status == Status.PENDING and released.claim != "old-claim"


def test_a_failed_recovery_at_start_is_left_to_the_next_pass(monkeypatch, caplog, db):
    def down(**_):
        raise DatabaseError("database is locked")

    monkeypatch.setattr(tasks, "checks_sweep", down)
    tasks._recover_at_start()
    assert "recovery sweep at start failed" in caplog.text
