"""Stopping the child processes that ``make run`` and the tests start (Redis, the Celery worker,
the web server, the playground generator)."""

from __future__ import annotations

import signal
import subprocess


def stop_process(process: subprocess.Popen[bytes] | None, timeout: float) -> None:
    """SIGTERM, up to ``timeout`` seconds to exit, then SIGKILL; a no-op once it has exited."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
