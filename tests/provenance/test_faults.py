"""Faults, for real: a Celery worker SIGKILLed mid-audit, Redis killed with checks queued and
restarted empty, the database locked by another process. Every check still completes exactly
once (the sweeper re-enqueues from the database, the tasks are idempotent), and what cannot
be stored gets a clear 503 with nothing half-stored.

This module runs its own Redis and workers (the session's worker must not take its tasks),
and points this process's Celery producer at them for its duration.
"""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import timedelta

import pytest
import redis
from django.conf import settings as django_settings
from django.db.models import F
from django.utils import timezone

from provenance.audits.models import Audit
from provenance.checks import queue
from provenance.checks.models import Check, Hypothesis
from provenance.runner.processes import stop_process
from provenance.runner.redis_server import RedisServer, free_port
from provenance.usage.models import DetectionLog
from tests.provenance import capture
from tests.provenance.conftest import (
    REPO,
    database_url,
    on_postgresql,
    point_celery_at,
    spawn_worker,
    worker_env,
)
from tests.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def fault_redis(tmp_path_factory):
    from provenance.celery import app

    previous = app.conf.broker_url
    server = RedisServer(tmp_path_factory.mktemp("fault-redis")).start()
    point_celery_at(server.url)
    yield server
    server.stop()
    point_celery_at(previous)


@pytest.fixture(scope="module")
def worker_log(tmp_path_factory):
    return tmp_path_factory.mktemp("fault-worker") / "worker.log"


def _sweep(redis_url: str, *, pending_after: float) -> str:
    """One pass of ``manage.py checks_sweep`` in its own process; returns its output."""
    done = subprocess.run(
        [sys.executable, "manage.py", "checks_sweep", "--pending-after", str(pending_after)],
        cwd=REPO,
        env=worker_env(redis_url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    capture.record("checks_sweep", done.stdout + done.stderr)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def sweeper_loop(fault_redis, tmp_path):
    """``checks_sweep --every 1`` in its own process, as make run's runner and compose run it."""
    log = tmp_path / "sweeper.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "checks_sweep", "--every", "1", "--pending-after", "3"],
            cwd=REPO,
            env=worker_env(fault_redis.url),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    yield process
    stop_process(process, timeout=10)
    capture.record("checks_sweep --every", log.read_text())


def _exactly_once(check_ids: list, keys: int = 1) -> None:
    """Done, with one result set each: one row per hypothesis, no more, no less."""
    checks = Check.objects.filter(id__in=check_ids)
    assert checks.count() == len(check_ids)
    assert set(checks.values_list("status", flat=True)) == {"done"}
    assert Hypothesis.objects.filter(check_run__in=check_ids).count() == keys * len(check_ids)
    assert not checks.filter(finished_at__isnull=True).exists()


def test_a_worker_killed_mid_audit_loses_and_doubles_nothing(
    fault_redis, sweeper_loop, worker_log, api_for, alice_key, wm_text, human_text, settings
):
    settings.PROVENANCE_AUDIT_CHUNK = 1  # one task per text: the kill lands inside the audit
    texts = [(wm_text if i % 2 else human_text) * 3 for i in range(60)]
    worker = spawn_worker(fault_redis.url, worker_log, name="fault")
    try:
        items = [{"client_id": f"doc-{i}", "text": t} for i, t in enumerate(texts)]
        answer = api_for("alice").post("/api/v1/audits", {"texts": items}, format="json")
        assert answer.status_code == 202
        audit_id = answer.json()["id"]
        ids = list(Check.objects.filter(audit_id=audit_id).values_list("id", flat=True))
        wait_until(
            lambda: Check.objects.filter(audit_id=audit_id, status="done").count() >= 5, 120, 0.01
        )
        worker.kill()  # SIGKILL: no shutdown, no ack, whatever it held is in flight
        worker.wait()
    finally:
        stop_process(worker, timeout=20)
    held = list(
        Check.objects.filter(audit_id=audit_id, status="running").values_list("id", flat=True)
    )
    done_before = dict(
        Check.objects.filter(audit_id=audit_id, status="done").values_list("id", "finished_at")
    )
    assert 0 < len(done_before) < len(texts), "the kill must land mid-audit"

    # The same node name again, as make run's supervisor and a restarted container do: the
    # new worker takes the old one for dead at start and its checks are queued at once.
    worker = spawn_worker(fault_redis.url, worker_log, name="fault")
    ready = time.monotonic()
    try:
        wait_until(lambda: not Check.objects.filter(id__in=held, status="running").exists(), 30)
        released = time.monotonic() - ready
        wait_until(lambda: Audit.objects.get(id=audit_id).status == "done", 120)
        finished = time.monotonic() - ready
    finally:
        stop_process(worker, timeout=20)
    print(f"recovery: held check(s) released {released:.2f} s after the new worker was ready;")
    print(f"  the remaining {len(texts) - len(done_before)} texts done {finished:.1f} s after it")
    _exactly_once(ids)
    after = dict(Check.objects.filter(id__in=done_before).values_list("id", "finished_at"))
    assert after == done_before  # what was done before the kill was not scored again
    counts = api_for("alice").get(f"/api/v1/audits/{audit_id}").json()["counts"]
    assert {k: counts[k] for k in ("done", "failed", "open", "watermarked")} == {
        "done": 60,
        "failed": 0,
        "open": 0,
        "watermarked": 30,
    }
    # every finished text has exactly one of the three verdicts
    assert counts["watermarked"] + counts["not_watermarked"] + counts["inconclusive"] == 60


def test_redis_lost_with_checks_queued_the_sweeper_completes_them(
    fault_redis, worker_log, api_for, alice_key, wm_text, human_text
):
    alice = api_for("alice")
    queued = [
        alice.post("/api/v1/checks", {"text": t}, format="json").json()
        for t in (wm_text, human_text, wm_text[:500])
    ]
    assert all(body["queued_at"] and not body["notice"] for body in queued)

    fault_redis.process.kill()  # by PID, with the three messages in it and no worker
    fault_redis.process.wait()
    started = time.monotonic()
    waiting = [
        alice.post("/api/v1/checks", {"text": t}, format="json") for t in (human_text, wm_text)
    ]
    assert time.monotonic() - started < 20  # the web app does not hang on the broker
    for answer in waiting:  # accepted, kept, and the API says why nothing moves
        assert answer.status_code == 202
        body = answer.json()
        assert body["status"] == "pending" and body["queued_at"] is None
        assert "queue is unavailable" in body["notice"]
        assert "queue is unavailable" in alice.get(f"/api/v1/checks/{body['id']}").json()["notice"]
    items = [{"client_id": "x", "text": wm_text}, {"client_id": "y", "text": human_text}]
    audit = alice.post("/api/v1/audits", {"texts": items}, format="json")
    assert audit.status_code == 202 and "its checks wait" in audit.json()["notice"]

    fault_redis.start()  # same port, empty: the three queued messages are gone
    ids = [body["id"] for body in queued] + [a.json()["id"] for a in waiting]
    ids += list(Check.objects.filter(audit_id=audit.json()["id"]).values_list("id", flat=True))
    # A second later, as the sweeper's clock reads it: the rows are aged, not waited for.
    # Nothing waits in the queue and no worker holds them: the three are lost, and the four
    # the broker never got are queued for the first time.
    second = timedelta(seconds=1.5)
    Check.objects.filter(id__in=ids).update(
        created_at=F("created_at") - second, queued_at=F("queued_at") - second
    )
    assert "stuck 7, queued 7" in _sweep(fault_redis.url, pending_after=1)
    worker = spawn_worker(fault_redis.url, worker_log, name="fault")
    try:
        wait_until(lambda: Check.objects.filter(id__in=ids, status="done").count() == 7, 90)
        wait_until(lambda: queue.backlog() == 0, 30)  # no second copy left to score
        assert "stuck 0" in _sweep(fault_redis.url, pending_after=1)
    finally:
        stop_process(worker, timeout=20)
    _exactly_once(ids)
    assert Audit.objects.get(id=audit.json()["id"]).status == "done"
    assert alice.get(f"/api/v1/audits/{audit.json()['id']}").json()["notice"] == ""
    verdicts = Check.objects.filter(id__in=ids).values_list("text", "is_watermarked")
    assert {text[:30]: flag for text, flag in verdicts}[wm_text[:30]] is True


def _short_lock_wait(connection) -> None:
    # This process gives up on a held lock after 0.3 s instead of 20 s (a fresh connection).
    connection.close()
    if on_postgresql():
        connection.settings_dict["OPTIONS"]["options"] = "-c lock_timeout=300"
    else:
        connection.settings_dict["OPTIONS"]["timeout"] = 0.3


def test_a_locked_database_answers_503_and_stores_nothing(
    api_for, client, cast, alice_key, human_text
):
    from django.db import connection

    alice = api_for("alice")
    client.force_login(cast["alice"])
    options = dict(connection.settings_dict["OPTIONS"])
    before = (Check.objects.count(), Audit.objects.count(), DetectionLog.objects.count())
    holder = _hold_lock()
    try:
        _short_lock_wait(connection)
        api = alice.post("/api/v1/checks", {"text": human_text}, format="json")
        audit = alice.post("/api/v1/audits", {"texts": [{"text": human_text}]}, format="json")
        page = client.post("/", {"text": human_text})
    finally:
        holder.kill()
        holder.wait()
        connection.close()
        connection.settings_dict["OPTIONS"] = options
    for answer in (api, audit):
        assert answer.status_code == 503 and answer["Retry-After"]
        assert "database is unavailable or busy" in answer.json()["detail"]
    assert page.status_code == 503 and b"nothing was stored" in page.content
    after = (Check.objects.count(), Audit.objects.count(), DetectionLog.objects.count())
    assert after == before
    assert alice.post("/api/v1/checks", {"text": human_text}, format="json").status_code == 202


def _hold_lock() -> subprocess.Popen:
    """Another process holds the database's write lock (PostgreSQL: the checks tables)."""
    db = django_settings.DATABASES["default"]
    if on_postgresql():
        script = (
            "import psycopg, time\n"
            f"c = psycopg.connect({database_url()!r})\n"
            "c.execute('LOCK TABLE checks_check, checks_audit, checks_detectionlog "
            "IN ACCESS EXCLUSIVE MODE'); print('locked', flush=True); time.sleep(120)"
        )
    else:
        script = (
            "import sqlite3, time\n"
            f"c = sqlite3.connect({str(db['NAME'])!r}, isolation_level=None, timeout=30)\n"
            "c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); time.sleep(120)"
        )
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    return holder


def test_make_runs_sweeper_queues_a_check_the_broker_never_got(
    fault_redis, api_for, alice_key, human_text, monkeypatch
):
    from provenance.celery import app
    from provenance.runner.embedded import _Sweeper

    point_celery_at("redis://127.0.0.1:1/0")  # nothing listens there: the broker is down
    try:
        body = api_for("alice").post("/api/v1/checks", {"text": human_text}, format="json").json()
    finally:
        point_celery_at(fault_redis.url)
    assert body["queued_at"] is None and app.conf.broker_url == fault_redis.url
    Check.objects.filter(id=body["id"]).update(created_at=timezone.now() - timedelta(seconds=30))
    sweeper = _Sweeper()
    sweeper.last -= sweeper.every  # due now
    sweeper.tick()
    assert Check.objects.get(id=body["id"]).queued_at is not None
    messages = redis.Redis.from_url(fault_redis.url).lrange("celery", 0, -1)
    assert any(body["id"].encode() in message for message in messages)


def test_an_unreachable_database_answers_503_not_500(api_for, client, cast, alice_key, tmp_path):
    from django.db import connection

    alice = api_for("alice")
    client.force_login(cast["alice"])
    saved = dict(connection.settings_dict)
    connection.close()
    if on_postgresql():
        connection.settings_dict["PORT"] = free_port()  # nothing listens there
    else:
        connection.settings_dict["NAME"] = str(tmp_path / "gone" / "db.sqlite3")  # cannot open
    try:
        api = alice.post("/api/v1/checks", {"text": "some text"}, format="json")
        detect = alice.post("/detect", {"text": "some text"}, format="json")
        page = client.get("/checks/")
    finally:
        connection.close()
        connection.settings_dict.update(saved)
    assert api.status_code == detect.status_code == page.status_code == 503
    assert "database is unavailable" in api.json()["detail"] and api["Retry-After"] == "5"
    assert not Check.objects.exists()
