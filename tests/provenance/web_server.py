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
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "provenance.wsgi:application"]
            + ["--bind", f"127.0.0.1:{port}", "--no-control-socket", *options],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"

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
