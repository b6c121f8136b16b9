"""``manage.py checks_sweep``: one pass reaps dead workers, queues again lost checks, purges
old texts, reports the counts and touches the alive file; a database error in a single pass
is raised, in a loop it is reported and retried."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import OperationalError
from django.utils import timezone

from provenance.checks.models import Check, Status
from provenance.checks.services import check_create
from provenance.heartbeats.models import Worker
from provenance.sweeper.management.commands import checks_sweep


def _sweep(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("checks_sweep", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.mark.django_db(transaction=True)  # each pass closes the connection
def test_one_pass_releases_a_dead_workers_check_purges_and_touches_the_alive_file(
    cast, alice_key, settings, tmp_path, quiet_redis
):
    settings.PROVENANCE_RETENTION_DAYS = 30
    now = timezone.now()
    dead = Worker.objects.create(
        nodename="w@gone", pid=1, started_at=now, beat_at=now - timedelta(hours=1)
    )
    held = check_create(user=cast["alice"], text="held by a silent worker")
    Check.objects.filter(id=held.id).update(
        status=Status.RUNNING, worker=dead, claim="c", started_at=now
    )
    old = check_create(user=cast["alice"], text="an old essay")
    Check.objects.filter(id=old.id).update(created_at=now - timedelta(days=31))
    alive = tmp_path / "alive"
    out, _ = _sweep("--alive-file", str(alive))
    assert "dead workers 1" in out and "purged 1" in out
    assert alive.exists()
    released = Check.objects.get(id=held.id)
    assert released.status == Status.PENDING and released.queued_at is not None
    assert Worker.objects.get(id=dead.id).dead_at is not None


@pytest.mark.django_db(transaction=True)
def test_a_database_error_stops_a_single_pass_and_is_retried_in_a_loop(monkeypatch):
    passes = []

    def failing(**kwargs):
        passes.append(kwargs)
        raise OperationalError("database is locked")

    monkeypatch.setattr(checks_sweep, "checks_sweep", failing)
    with pytest.raises(OperationalError):
        _sweep()

    def stop_after_three(seconds):
        if len(passes) >= 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(checks_sweep.time, "sleep", stop_after_three)
    err = io.StringIO()
    with pytest.raises(KeyboardInterrupt):
        call_command("checks_sweep", "--every", "0.01", "--pending-after", "7", stderr=err)
    assert len(passes) == 3 and passes[-1]["pending_after"] == 7.0
    assert err.getvalue().count("sweep failed (OperationalError); retrying") == 2
