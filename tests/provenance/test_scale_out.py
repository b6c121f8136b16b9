"""Scale-out across hosts, for real: PostgreSQL, Redis, the web app (with the sweeper) and
three Celery worker hosts, each in its own network namespace and talking over a bridge only.
A 20,000-text audit is submitted from a client host; one worker host is killed mid-audit;
the other two finish it, and every text is scored exactly once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from tests.provenance.netns import Hosts, NamespacesUnavailable
from tests.provenance.postgres_server import PostgresServer, PostgresStartError
from tests.waiting import wait_until

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
NUM_TEXTS = 20_000
WORKERS = ["w1", "w2", "w3"]
KEY = 0x5CA1_E007_D00D_F00D

SETUP = """
import django; django.setup()
from knox.models import AuthToken
from provenance.accounts.services import team_create, user_create
from provenance.keys.services import key_create, tokenizer_default
team = team_create(name="scale")
user = user_create(username="scale", password="scale-pass-123", team=team)
key_create(name="scale-key", team=team, tokenizer=tokenizer_default(), value={key})
print(AuthToken.objects.create(user=user)[1])
"""
CLIENT = """
import json, sys, httpx
from tests.provenance.watermark import HUMAN_TEXT, watermarked_text
base, token, command = sys.argv[1:4]
headers = {{"Authorization": "Token " + token}}
if command == "submit":
    marked = [watermarked_text({key}, 40, seed=i) for i in range(8)]
    words = HUMAN_TEXT.split()
    texts = [
        {{"client_id": str(i), "text": marked[i % 8] if i % 2 else " ".join(words[i % 50 :])}}
        for i in range({n})
    ]
    answer = httpx.post(base + "/api/v1/audits", json={{"texts": texts}}, headers=headers,
                        timeout=600)
    assert answer.status_code == 202, answer.text[:500]
    print(answer.json()["id"])
else:
    print(json.dumps(httpx.get(base + "/api/v1/audits/" + sys.argv[4], headers=headers,
                               timeout=30).json()))
"""
MIGRATE = """
import django; django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
print("migrated")
"""
VERIFY = """
import django, json, sys; django.setup()
from django.db.models import Count
from provenance.checks.models import Check, Hypothesis
checks = Check.objects.filter(audit_id=sys.argv[1])
per_check = checks.annotate(n=Count("hypotheses")).values_list("n", flat=True)
print(json.dumps({
    "checks": checks.count(),
    "done": checks.filter(status="done").count(),
    "hypotheses": Hypothesis.objects.filter(check_run__audit_id=sys.argv[1]).count(),
    "per_check": sorted(set(per_check)),
    "by_worker": dict(checks.values_list("worker__nodename").annotate(n=Count("id"))),
}))
"""


@pytest.fixture
def hosts():
    hosts = Hosts(["db", "redis", "web", "client", *WORKERS])
    try:
        hosts.up()
    except (NamespacesUnavailable, FileNotFoundError) as exc:
        pytest.skip(f"network namespaces are not permitted here: {exc}")
    yield hosts
    hosts.close()


@pytest.fixture
def postgres(hosts):
    server = PostgresServer(port=5432, host=hosts.address("db"), wrap=hosts.run("db"))
    try:
        server.start()
    except PostgresStartError as exc:
        pytest.skip(f"PostgreSQL cannot start in a namespace here: {exc}")
    yield server
    server.stop()


def _python(hosts: Hosts, host: str, code: str, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [*hosts.run(host), sys.executable, "-c", code, *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def _env(hosts: Hosts) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "DJANGO_SETTINGS_MODULE": "provenance.settings",
        "DATABASE_URL": f"postgres://postgres@{hosts.address('db')}:5432/postgres",
        "REDIS_URL": f"redis://{hosts.address('redis')}:6379/0",
        "PROVENANCE_KEK": Fernet.generate_key().decode(),
        "DJANGO_ALLOWED_HOSTS": hosts.address("web"),
        "PROVENANCE_MAX_AUDIT_TEXTS": str(NUM_TEXTS),
        "PROVENANCE_AUDIT_CHUNK": "250",
        "PROVENANCE_WORKER_HEARTBEAT": "1",  # a silent host is dead after 5 s
        "OMP_NUM_THREADS": "1",
    }


def _start_services(hosts: Hosts, env: dict[str, str], logs: Path) -> dict:
    redis = hosts.start(
        "redis",
        ["redis-server", "--bind", hosts.address("redis"), "--port", "6379"]
        + ["--protected-mode", "no", "--save", "", "--appendonly", "no"],
        env,
        logs / "redis.log",
    )
    web = hosts.start(
        "web",
        [sys.executable, "-m", "gunicorn", "provenance.wsgi:application"]
        + ["--bind", f"{hosts.address('web')}:8000", "--workers", "2", "--threads", "4"],
        env,
        logs / "web.log",
    )
    sweep = [sys.executable, "manage.py", "checks_sweep", "--every", "1"]
    hosts.start("web", sweep, env, logs / "sweeper.log")
    workers = {
        name: hosts.start(
            name,
            [sys.executable, "-m", "celery", "-A", "provenance", "worker", "-n", f"{name}@%h"]
            + ["--pool=solo", "--loglevel=INFO", "--without-gossip", "--without-mingle"],
            env,
            logs / f"{name}.log",
        )
        for name in WORKERS
    }
    return {"redis": redis, "web": web, "workers": workers}


def _wait(predicate, timeout: float, what: str) -> None:
    wait_until(predicate, timeout, 1.0, what=what)


def test_three_worker_hosts_one_killed_mid_audit_score_every_text_once(hosts, postgres, tmp_path):
    env = _env(hosts)
    _python(hosts, "web", MIGRATE, env)
    token = _python(hosts, "web", SETUP.format(key=KEY), env)
    services = _start_services(hosts, env, tmp_path)
    for name, log in [(w, tmp_path / f"{w}.log") for w in WORKERS]:
        _wait(lambda log=log: b"ready." in log.read_bytes(), 120, f"{name} ready")
    base = f"http://{hosts.address('web')}:8000"
    client = CLIENT.format(key=KEY, n=NUM_TEXTS)
    _wait(lambda: b"Booting worker" in (tmp_path / "web.log").read_bytes(), 60, "web up")
    submitted = time.monotonic()
    audit_id = _python(hosts, "client", client, env, base, token, "submit")

    def status() -> dict:
        return json.loads(_python(hosts, "client", client, env, base, token, "status", audit_id))

    _wait(lambda: status()["counts"]["done"] >= NUM_TEXTS // 5, 600, "a fifth scored")
    killed = services["workers"]["w2"]
    killed.kill()  # the host is gone: no shutdown, no ack, its claims stay behind
    killed.wait()
    kill_time = time.monotonic()
    done_at_kill = status()["counts"]["done"]
    assert done_at_kill < NUM_TEXTS, "the kill must land mid-audit"
    _wait(lambda: status()["status"] == "done", 900, "the audit finished")
    print(
        f"scale-out: {NUM_TEXTS} texts, w2 killed at {done_at_kill} done "
        f"({kill_time - submitted:.0f} s after submitting); audit done "
        f"{time.monotonic() - kill_time:.0f} s after the kill"
    )

    found = json.loads(_python(hosts, "web", VERIFY, env, audit_id))
    assert found["checks"] == found["done"] == NUM_TEXTS
    assert found["hypotheses"] == NUM_TEXTS and found["per_check"] == [1]
    assert set(found["by_worker"]) <= {f"{w}@{os.uname().nodename}" for w in WORKERS}
    assert len(found["by_worker"]) == 3  # every host scored some; w2 only before it died
    counts = status()["counts"]
    assert counts["done"] == NUM_TEXTS and counts["failed"] == 0
    assert counts["watermarked"] >= NUM_TEXTS // 2 * 0.9
