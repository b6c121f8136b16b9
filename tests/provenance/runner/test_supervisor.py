"""The runner's supervisor with real child processes: a crashed child is restarted with
backoff while the others keep running; a crash loop stops with a message naming the child
and its log; an optional child in a crash loop is left stopped."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from provenance.runner.supervisor import Child, CrashLoop, Supervisor, spawn
from tests.waiting import wait_until

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]
CRASHER = [sys.executable, "-c", "import sys; print('boom', flush=True); sys.exit(3)"]


def _child(name: str, args: list[str], tmp_path: Path, **options) -> Child:
    log = tmp_path / "logs" / f"{name}.log"
    return Child(name, lambda: spawn(args, {}, log), log, **options)


def _poll_until(supervisor: Supervisor, condition, seconds: float = 20) -> None:
    """Run the supervisor's loop until ``condition()`` holds (a crash loop raises out of it)."""
    wait_until(lambda: (supervisor.poll(), condition())[1], seconds, 0.02)


def test_a_killed_child_is_restarted_and_the_others_keep_running(tmp_path):
    lines: list[str] = []
    worker, web = _child("worker", SLEEPER, tmp_path), _child("web", SLEEPER, tmp_path)
    supervisor = Supervisor([worker, web], backoff=0.1, say=lines.append)
    supervisor.start_all()
    try:
        first_worker, first_web = worker.process, web.process
        first_worker.send_signal(signal.SIGKILL)
        first_worker.wait()
        _poll_until(supervisor, lambda: worker.process is not first_worker)
        assert worker.process is not first_worker and worker.process.poll() is None
        assert web.process is first_web and first_web.poll() is None  # untouched
        assert lines == [f"  worker exited with code -9; restarting in 0.1 s (log: {worker.log})"]
    finally:
        supervisor.stop_all()
    assert worker.process.poll() is not None and web.process.poll() is not None


def test_the_backoff_doubles_while_a_child_keeps_crashing(tmp_path):
    lines: list[str] = []
    crasher = _child("worker", CRASHER, tmp_path)
    supervisor = Supervisor([crasher], backoff=0.1, max_crashes=10, say=lines.append)
    supervisor.start_all()
    _poll_until(supervisor, lambda: len(lines) >= 3)
    supervisor.stop_all()
    delays = [float(line.split("restarting in ")[1].split(" s")[0]) for line in lines]
    assert delays[:3] == [0.1, 0.2, 0.4]
    assert crasher.log.read_text().count("boom") == len(lines)  # its output is in its log
    assert crasher.log.stat().st_mode & 0o777 == 0o600


def test_a_crash_loop_stops_with_the_child_and_its_log_named(tmp_path):
    crasher = _child("web", CRASHER, tmp_path)
    sleeper = _child("worker", SLEEPER, tmp_path)
    supervisor = Supervisor([sleeper, crasher], backoff=0.01, max_crashes=3, say=lambda _: None)
    supervisor.start_all()
    try:
        with pytest.raises(CrashLoop) as stopped:
            _poll_until(supervisor, lambda: False)
    finally:
        supervisor.stop_all()
    message = str(stopped.value)
    assert "web exited with code 3; it crashed 3 times" in message
    assert str(crasher.log) in message and "stopping everything" in message
    assert sleeper.process.poll() is not None  # stop_all stopped the healthy one too


def test_an_optional_child_in_a_crash_loop_stays_stopped_while_the_rest_serves(tmp_path):
    lines: list[str] = []
    crasher = _child("generator", CRASHER, tmp_path, required=False)
    sleeper = _child("web", SLEEPER, tmp_path)
    supervisor = Supervisor([sleeper, crasher], backoff=0.01, max_crashes=3, say=lines.append)
    supervisor.start_all()
    try:
        _poll_until(supervisor, lambda: crasher.given_up)
        assert crasher.given_up and sleeper.process.poll() is None
    finally:
        supervisor.stop_all()
    assert "generator stays stopped; the rest keeps serving" in lines[-1]
    assert str(crasher.log) in lines[-1]


def test_a_child_that_fails_to_start_is_retried(tmp_path):
    attempts: list[int] = []

    def start():
        attempts.append(1)
        if len(attempts) < 3:
            raise OSError("port in use")
        return spawn(SLEEPER, {}, tmp_path / "redis.log")

    lines: list[str] = []
    child = Child("Redis", start, tmp_path / "redis.log")
    supervisor = Supervisor([child], backoff=0.01, say=lines.append)
    supervisor.start_all()
    try:
        _poll_until(supervisor, lambda: child.process is not None)
        assert len(attempts) == 3 and child.process.poll() is None
    finally:
        supervisor.stop_all()
    assert "Redis failed to start (OSError: port in use); restarting in" in lines[0]


def test_the_web_gets_two_processes_per_core_unless_told(monkeypatch):
    from provenance.runner.embedded import web_workers

    monkeypatch.delenv("PROVENANCE_WEB_WORKERS", raising=False)
    assert web_workers() == min(max(2 * len(os.sched_getaffinity(0)), 2), 8)
    monkeypatch.setenv("PROVENANCE_WEB_WORKERS", "3")
    assert web_workers() == 3
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("PROVENANCE_WEB_WORKERS", bad)
        with pytest.raises(ValueError, match="PROVENANCE_WEB_WORKERS"):
            web_workers()


def test_the_web_threads_default_to_eight_unless_told(monkeypatch):
    from provenance.runner.embedded import _web_args, web_threads

    monkeypatch.delenv("PROVENANCE_WEB_THREADS", raising=False)
    assert web_threads() == 8
    monkeypatch.setenv("PROVENANCE_WEB_THREADS", "4")
    args = _web_args("127.0.0.1", 8000)
    assert args[args.index("--threads") + 1] == "4" and "--preload" in args
    monkeypatch.setenv("PROVENANCE_WEB_THREADS", "many")
    with pytest.raises(ValueError, match="PROVENANCE_WEB_THREADS"):
        web_threads()
