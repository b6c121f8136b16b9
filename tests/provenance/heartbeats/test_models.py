"""A worker row: alive or dead at a glance, and a check's holder without a database
constraint (a purged worker row never fails its claims)."""

from __future__ import annotations

from django.utils import timezone

from provenance.checks.models import Check
from provenance.checks.services import check_create
from provenance.checks.services.claims import checks_claim
from provenance.heartbeats import services as workers
from provenance.heartbeats.models import Worker


def test_a_worker_says_whether_it_is_alive(db):
    now = timezone.now()
    worker = Worker.objects.create(nodename="celery@box", pid=7, started_at=now, beat_at=now)
    assert str(worker) == "celery@box pid 7 (alive)"
    worker.dead_at = now
    assert str(worker) == "celery@box pid 7 (dead)"


def test_a_check_keeps_its_holder_when_the_worker_row_is_purged(
    monkeypatch, cast, alice_key, human_text
):
    monkeypatch.setattr(workers, "_current", None)
    worker, _ = workers.worker_start("celery@box")
    check = check_create(user=cast["alice"], text=human_text)
    checks_claim([check.id], "a-claim")
    Worker.objects.filter(id=worker.id).delete()
    assert Check.objects.get(id=check.id).worker_id == worker.id
