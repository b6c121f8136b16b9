"""A gunicorn serving the product on loopback for a test, answered before it is handed over."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from provenance.runner.processes import stop_process
from provenance.runner.redis_server import free_port
from tests.provenance.conftest import REPO
from tests.waiting import wait_until


@contextmanager
def gunicorn(env: dict[str, str], log: Path, *options: str) -> Iterator[str]:
    """The server's base URL; ``options``: gunicorn's (``--workers``, ``--threads``)."""
    port = free_port()
    args = [sys.executable, "-m", "gunicorn", "provenance.wsgi:application"]
    args += ["--bind", f"127.0.0.1:{port}", "--no-control-socket", *options]
    with _serving(args, env, log, f"http://127.0.0.1:{port}") as url:
        yield url


@contextmanager
def gunicorn_as_run(env: dict[str, str], log: Path) -> Iterator[str]:
    """``make run``'s own gunicorn command line (``provenance.runner.embedded``, every option
    it passes) on a free loopback port. Its processes and threads are read, as the runner
    reads them, from this process's ``PROVENANCE_WEB_WORKERS`` and ``PROVENANCE_WEB_THREADS``."""
    from provenance.runner.embedded import _web_args

    port = free_port()
    with _serving(_web_args("127.0.0.1", port), env, log, f"http://127.0.0.1:{port}") as url:
        yield url


@contextmanager
def _serving(args: list[str], env: dict[str, str], log: Path, url: str) -> Iterator[str]:
    with log.open("w") as out:
        process = subprocess.Popen(args, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)

        def answers() -> bool:
            try:
                return httpx.get(url + "/healthz", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        try:
            wait_until(answers, 60, 0.3, alive=lambda: process.poll() is None)
            yield url
        finally:
            stop_process(process, 10)
