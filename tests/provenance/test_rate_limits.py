"""Rate limits are counted across web processes: two gunicorn workers share one Redis-backed
count, so a user cannot multiply the detection rate by the number of workers."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest
from knox.models import AuthToken

from provenance.runner.processes import stop_process
from provenance.runner.redis_server import free_port
from tests.provenance.conftest import REPO, worker_env
from tests.waiting import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
RATE = 4  # detection submissions per minute in this test


@pytest.fixture
def two_workers(redis_server, tmp_path):
    port = free_port()
    env = worker_env(
        redis_server.url,
        PROVENANCE_CACHE_URL=redis_server.url,
        PROVENANCE_DETECT_THROTTLE=f"{RATE}/min",
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
    )
    log = (tmp_path / "gunicorn.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "provenance.wsgi:application"]
        + ["--bind", f"127.0.0.1:{port}", "--workers", "2", "--no-control-socket"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            return httpx.get(url + "/accounts/login/", timeout=2).status_code < 500
        except httpx.HTTPError:
            return False

    wait_until(answers, 60, 0.3, alive=lambda: process.poll() is None)
    yield url
    stop_process(process, 10)
    log.close()


def test_two_gunicorn_workers_share_one_detection_rate(two_workers, cast):
    _, token = AuthToken.objects.create(user=cast["alice"])
    codes = []
    for _ in range(3 * RATE):
        # A new connection each time: gunicorn hands connections to either worker.
        with httpx.Client(headers={"Authorization": f"Token {token}"}) as client:
            codes.append(client.post(two_workers + "/detect", json={"text": ""}).status_code)
    assert codes[:RATE] == [400] * RATE  # counted (the empty text is refused after the count)
    assert codes[RATE:] == [429] * (2 * RATE)
