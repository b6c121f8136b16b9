"""`make run` keeps serving through crashes: during an audit the Celery worker, then Redis, then
a gunicorn worker are SIGKILLed. The runner restarts what died, the web answers every request
within 5 s of each kill, and the audit completes with every text scored exactly once."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from provenance.runner.redis_server import free_port
from tests.provenance.runner.test_embedded import DEMO_KEY, _csrf, _wait_for_login
from tests.provenance.watermark import HUMAN_TEXT, watermarked_text
from tests.waiting import wait_until

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[3]
# Enough that the audit is still open at the third kill: an audit text costs about 2 ms of
# server CPU, so 1,200 texts could finish between the first kill and the last.
NUM_TEXTS = 4000


def _children(parent: int) -> list[tuple[int, str]]:
    """(pid, command line) of the live children of ``parent`` (Celery rewrites its process
    title and so its environment: parentage is what identifies the runner's children)."""
    found = []
    for proc_dir in Path("/proc").glob("[0-9]*"):
        try:
            fields = (proc_dir / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (proc_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[1]) == parent:
            found.append((int(proc_dir.name), cmdline))
    return found


def _child_pid(runner: int, needle: str, grandchild: bool = False) -> int:
    # "--maxmemory": the public cache's bounded Redis, not the broker's
    children = [(pid, line) for pid, line in _children(runner) if "--maxmemory" not in line]
    pids = [pid for pid, cmdline in children if needle in cmdline]
    assert pids, f"no child of the runner runs {needle}"
    if grandchild:  # a gunicorn worker: a child of the gunicorn master
        pids = [pid for pid, _ in _children(pids[0])]
        assert pids, f"no {needle} worker"
    return pids[0]


def _token(base: str, password: str) -> str:
    with httpx.Client(base_url=base, follow_redirects=True, timeout=30) as web:
        csrf = _csrf(web, "/accounts/login/")
        data = {"username": "demo", "password": password, "csrfmiddlewaretoken": csrf}
        web.post("/accounts/login/", data=data)
        page = web.post(
            "/accounts/token/", data={"csrfmiddlewaretoken": _csrf(web, "/accounts/token/")}
        )
    return re.search(r'<code id="api-token">([0-9a-f]+)</code>', page.text).group(1)


class Probe:
    """Fresh-connection GETs of the audit, each with a 5 s deadline: what a user sees."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.headers = url, {"Authorization": f"Token {token}"}
        self.failures: list[str] = []
        self.slowest = 0.0

    def get(self) -> dict:
        start = time.monotonic()
        try:
            answer = httpx.get(self.url, headers=self.headers, timeout=5)
        except httpx.HTTPError as exc:
            self.failures.append(f"{type(exc).__name__}: {exc}")
            return {}
        self.slowest = max(self.slowest, time.monotonic() - start)
        if answer.status_code != 200:
            self.failures.append(f"HTTP {answer.status_code}")
            return {}
        return answer.json()

    def for_seconds(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.get()
            time.sleep(0.2)

    def done(self) -> int:
        return self.get().get("counts", {}).get("done", -1)


def _texts() -> list[dict[str, str]]:
    marked = [watermarked_text(DEMO_KEY, 60 + i % 40, seed=i) for i in range(20)]
    words = (HUMAN_TEXT + " ") * 4
    return [
        {"client_id": f"doc-{i}", "text": marked[i % 20] if i % 2 else f"{i} {words[i % 97 :]}"}
        for i in range(NUM_TEXTS)
    ]


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


def test_make_run_restarts_the_worker_redis_and_web_during_an_audit(tmp_path):
    port, data_dir = free_port(), tmp_path / "data"
    env = {
        **os.environ,
        "PROVENANCE_DATA_DIR": str(data_dir),
        "PROVENANCE_PORT": str(port),
        "PROVENANCE_DEMO_KEY": str(DEMO_KEY),
        "OMP_NUM_THREADS": "1",
        "PROVENANCE_GENERATOR_URL": f"http://127.0.0.1:{free_port()}",  # no generator
        "PROVENANCE_AUDIT_CHUNK": "2",  # many small tasks: every kill lands mid-audit
        "PROVENANCE_SWEEP_INTERVAL": "1",
        "PROVENANCE_SWEEP_PENDING_AFTER": "3",
    }
    for name in ("DATABASE_URL", "REDIS_URL", "PROVENANCE_KEK", "DJANGO_SETTINGS_MODULE"):
        env.pop(name, None)
    runner = subprocess.Popen(
        [sys.executable, "-m", "provenance.runner.embedded"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # Started as a non-interactive shell starts a background job: SIGINT ignored. Ctrl-C
        # (the SIGINT below) must stop the runner all the same.
        preexec_fn=_ignore_sigint,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(runner.stdout), daemon=True).start()
    try:
        password = _wait_for_login(lines, runner)
        base = f"http://127.0.0.1:{port}"
        wait_until(lambda: _answers(base), 60, 0.2)
        token = _token(base, password)
        submitted = httpx.post(
            f"{base}/api/v1/audits",
            json={"texts": _texts()},
            headers={"Authorization": f"Token {token}"},
            timeout=120,
        )
        assert submitted.status_code == 202, submitted.text[:300]
        audit_id = submitted.json()["id"]
        probe = Probe(f"{base}/api/v1/audits/{audit_id}", token)
        _kill_during(probe, runner.pid, lines)
        wait_until(lambda: probe.get().get("status") == "done", 300, 0.5)
        assert probe.failures == [], probe.failures[:5]
        counts = probe.get()["counts"]
        assert counts["done"] == NUM_TEXTS and counts["failed"] == 0
    finally:
        runner.send_signal(signal.SIGINT)
        # Each child's stop is bounded (10 s, Redis 5 s), but the interrupt is only taken
        # once the sweeper's query returns, which may sit in SQLite's busy wait (20 s).
        try:
            code = runner.wait(120)
        except subprocess.TimeoutExpired:
            runner.kill()
            runner.wait(10)
            raise AssertionError(
                "make run did not stop within 120 s of Ctrl-C:\n" + "".join(lines)[-3000:]
            ) from None
    assert code == 0, "".join(lines)[-3000:]
    _scored_exactly_once(data_dir / "provenance.sqlite3", audit_id)
    print(f"slowest answer {probe.slowest:.2f} s")


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _answers(base: str) -> bool:
    try:
        return httpx.get(f"{base}/accounts/login/", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _kill_during(probe: Probe, runner: int, lines: list[str]) -> None:
    """Worker, Redis, a gunicorn worker: each killed while the audit is open, the web probed
    for 6 s after each kill, then scoring must make progress again before the next one."""
    wait_until(lambda: probe.done() >= 20, 120, 0.2)
    for name, needle in [("worker", "celery"), ("Redis", "redis-server"), ("web", "gunicorn")]:
        before = probe.done()
        assert before < NUM_TEXTS, f"the audit finished before the {name} kill"
        _kill(_child_pid(runner, needle, grandchild=name == "web"))
        probe.for_seconds(6)
        if name != "web":
            wait_until(lambda n=name: f"{n} exited with code -9" in "".join(lines), 10)
        wait_until(lambda b=before: probe.done() > b + 5, 120, 0.2)  # scoring resumed
        assert not probe.failures, f"after the {name} kill: {probe.failures[:5]}"


def _scored_exactly_once(database: Path, audit_id: str) -> None:
    with sqlite3.connect(database) as db:
        audit = audit_id.replace("-", "")
        rows = db.execute(
            "SELECT c.status, COUNT(h.id) FROM checks_check c "
            "LEFT JOIN checks_hypothesis h ON h.check_run_id = c.id "
            "WHERE c.audit_id = ? GROUP BY c.id",
            (audit,),
        ).fetchall()
    assert len(rows) == NUM_TEXTS
    assert {status for status, _ in rows} == {"done"}
    assert {hypotheses for _, hypotheses in rows} == {1}  # one key: one result row each
