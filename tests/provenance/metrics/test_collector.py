"""The database figures: grouped by surface and verdict, the verdict-time histogram's bucket
counts, the queue and the live workers; the processes' counters merged in, also from a
PROMETHEUS_MULTIPROC_DIR written by other processes."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from provenance.audits.models import Audit
from provenance.checks.models import Check, Status
from provenance.heartbeats.models import Worker
from provenance.metrics import collector, services
from provenance.metrics.models import Snapshot

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh(settings):
    settings.PROVENANCE_METRICS_MAX_AGE = 0
    collector.reset_cache()


def _check(cast, **fields) -> Check:
    return Check.objects.create(team=cast["acme"], text="t", key_ids=[], threshold=0.01, **fields)


def _aged(check: Check, created_seconds_ago: float, took: float) -> None:
    now = timezone.now()
    created = now - timedelta(seconds=created_seconds_ago)
    Check.objects.filter(id=check.id).update(
        created_at=created, finished_at=created + timedelta(seconds=took)
    )


def test_checks_are_counted_by_surface_status_and_verdict(cast):
    audit = Audit.objects.create(
        team=cast["acme"], request_hash="x", num_texts=1, key_ids=[], threshold=0.01
    )
    done = {"status": Status.DONE, "num_scored_tokens": 50}
    a = _check(cast, surface="api", verdict="watermarked", **done)
    b = _check(cast, surface="page", verdict="not_watermarked", **done)
    c = _check(cast, audit=audit, verdict="inconclusive", **done)
    d = _check(cast, surface="api", status=Status.FAILED)
    _check(cast, surface="page", status=Status.PENDING)
    _check(cast, surface="api", status=Status.RUNNING)
    for row, took in ((a, 0.2), (b, 7.0), (c, 100.0), (d, 0.01)):
        _aged(row, 200, took)
    Check.objects.filter(status=Status.PENDING).update(
        created_at=timezone.now() - timedelta(seconds=42)
    )
    figures = collector.database_figures()
    assert figures["submitted"] == {"api": 3, "page": 2, "audit": 1}
    assert figures["finished"] == {
        ("api", "watermarked"): 1,
        ("page", "not_watermarked"): 1,
        ("audit", "inconclusive"): 1,
        ("api", "failed"): 1,
    }
    assert figures["tokens"] == {"api": 50, "page": 50, "audit": 50}
    assert figures["pending"] == 1 and figures["running"] == 1
    assert 41 <= figures["oldest_age"] <= 60
    counts, total, seconds = figures["histogram"]["api"]
    bounds = services.VERDICT_BUCKETS
    assert total == 2 and seconds == pytest.approx(0.21, abs=1e-3)
    assert counts[bounds.index(0.05)] == 1 and counts[bounds.index(0.25)] == 2
    audit_counts = figures["histogram"]["audit"][0]
    assert audit_counts[bounds.index(60.0)] == 0 and audit_counts[bounds.index(300.0)] == 1


def test_a_check_stored_before_its_surface_was_recorded_is_unknown(cast):
    _check(cast, status=Status.PENDING)
    assert collector.database_figures()["submitted"] == {"unknown": 1}


def test_live_workers_come_from_their_heartbeats(cast, settings):
    now = timezone.now()
    Worker.objects.create(nodename="a@h", pid=1, started_at=now, beat_at=now)
    Worker.objects.create(nodename="b@h", pid=2, started_at=now, beat_at=now, dead_at=now)
    stale = now - timedelta(seconds=settings.PROVENANCE_WORKER_DEAD_AFTER + 5)
    Worker.objects.create(nodename="c@h", pid=3, started_at=stale, beat_at=stale)
    assert collector.database_figures()["workers"] == 1


def test_the_sweeper_tallies_are_exported(cast):
    services.tally_add(services.SWEEPER_REQUEUED, 3)
    services.tally_add(services.SWEEPER_REQUEUED, 2)
    text = collector.exposition().decode()
    assert "provenance_sweeper_requeued_total 5.0" in text


def test_figures_are_reused_within_the_max_age(cast, settings):
    settings.PROVENANCE_METRICS_MAX_AGE = 3600
    before = collector._cached_database_figures()
    _check(cast, surface="api", status=Status.PENDING)
    assert collector._cached_database_figures() is before
    collector.reset_cache()
    assert collector._cached_database_figures()["pending"] == before["pending"] + 1


CHILD = """
import os, sys
from provenance.metrics import services
services.public_refusal_count(sys.argv[1])
services.sync_finished_count("public", "watermarked", 30, 0.2)
"""


def test_every_process_counts_under_a_multiprocess_directory(cast, tmp_path, monkeypatch):
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "x"}
    for code in ("throttled", "variant_limit", "proof_of_work_required", "throttled"):
        subprocess.run(
            [sys.executable, "-c", CHILD, code],
            env={**__import__("os").environ, **env},
            check=True,
        )
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    values = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(collector.exposition().decode())
        for s in family.samples
    }
    refused = "provenance_public_refused_total"
    assert values[(refused, (("reason", "budget"),))] == 2
    assert values[(refused, (("reason", "variant_cap"),))] == 1
    assert values[(refused, (("reason", "proof_of_work"),))] == 1
    finished = (
        "provenance_checks_finished_total",
        (("surface", "public"), ("verdict", "watermarked")),
    )
    assert values[finished] == 4
    assert values[("provenance_detection_tokens_scored_total", (("surface", "public"),))] == 120
    bucket = ("provenance_check_verdict_seconds_bucket", (("le", "0.25"), ("surface", "public")))
    assert values[bucket] == 4
    assert values[("provenance_check_verdict_seconds_count", (("surface", "public"),))] == 4


def test_each_scrape_reads_only_what_was_written_since_and_counts_it_once(cast):
    old = _check(cast, surface="api", verdict="watermarked", status=Status.DONE)
    _aged(old, 3600, 1.0)
    first = collector.database_figures()
    assert first["finished"] == {("api", "watermarked"): 1}
    assert Snapshot.objects.get().finished_until is not None
    # A recent check is read again on every scrape (the settling window) but kept by none.
    recent = _check(cast, surface="page", verdict="inconclusive", status=Status.DONE)
    Check.objects.filter(id=recent.id).update(finished_at=timezone.now())
    for _ in range(3):
        figures = collector.database_figures()
        assert figures["finished"] == {("api", "watermarked"): 1, ("page", "inconclusive"): 1}
        assert figures["submitted"] == {"api": 1, "page": 1}
    # Rows behind the watermarks are in the shared snapshot: not read again, by this
    # process or by a new one (every instance exports the same figures).
    Check.objects.filter(id=old.id).update(verdict="not_watermarked")
    collector.reset_cache()
    assert collector.database_figures()["finished"][("api", "watermarked")] == 1
    Snapshot.objects.all().delete()  # without a snapshot, everything is read once
    assert collector.database_figures()["finished"][("api", "not_watermarked")] == 1


def test_the_settled_part_moves_forward(cast, monkeypatch):
    check = _check(cast, surface="api", verdict="watermarked", status=Status.DONE)
    Check.objects.filter(id=check.id).update(finished_at=timezone.now())
    collector.database_figures()
    assert Snapshot.objects.get().totals["finished"] == {}  # settling: read, not kept
    monkeypatch.setattr(collector, "SETTLE", timedelta(seconds=-5))
    figures = collector.database_figures()
    assert Snapshot.objects.get().totals["finished"] == {"api|watermarked": 1}
    assert figures["finished"] == {("api", "watermarked"): 1}
    assert collector.database_figures()["finished"] == {("api", "watermarked"): 1}


def test_the_page_and_the_api_record_their_surface(cast, alice_key, api_for, human_text, client):
    client.force_login(cast["alice"])
    assert client.post("/", {"text": human_text}).status_code == 302
    api_for("alice").post("/api/v1/checks", {"text": human_text}, format="json")
    assert sorted(Check.objects.values_list("surface", flat=True)) == ["api", "page"]
    assert collector.database_figures()["submitted"] == {"api": 1, "page": 1}
