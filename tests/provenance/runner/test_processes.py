"""Stopping a child (provenance.runner.processes): SIGTERM first, SIGKILL when it ignores it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from provenance.runner.processes import stop_process


def _child(code: str) -> subprocess.Popen[bytes]:
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline() == b"ready\n"
    return child


def test_a_child_that_honours_sigterm_exits_by_it():
    child = _child("import time; print('ready', flush=True); time.sleep(60)")
    stop_process(child, timeout=5)
    assert child.returncode == -signal.SIGTERM


def test_a_child_that_ignores_sigterm_is_killed_after_the_timeout():
    code = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(60)"
    )
    child = _child(code)
    started = time.monotonic()
    stop_process(child, timeout=0.3)
    assert child.returncode == -signal.SIGKILL
    assert 0.3 <= time.monotonic() - started < 5


def test_an_exited_or_absent_child_is_left_alone():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    stop_process(child, timeout=1)  # no signal to a reaped pid
    stop_process(None, timeout=1)
    assert child.returncode == 0
