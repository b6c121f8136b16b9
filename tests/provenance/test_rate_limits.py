"""Rate limits are counted across web processes: two gunicorn workers share one Redis-backed
count, so a user cannot multiply the detection rate by the number of workers."""

from __future__ import annotations

import httpx
import pytest
from knox.models import AuthToken

from tests.provenance.conftest import worker_env
from tests.provenance.web_server import gunicorn

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
RATE = 4  # detection submissions per minute in this test


@pytest.fixture
def two_workers(redis_server, tmp_path):
    env = worker_env(
        redis_server.url,
        PROVENANCE_CACHE_URL=redis_server.url,
        PROVENANCE_DETECT_THROTTLE=f"{RATE}/min",
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
    )
    with gunicorn(env, tmp_path / "gunicorn.log", "--workers", "2") as url:
        yield url


def test_two_gunicorn_workers_share_one_detection_rate(two_workers, cast):
    _, token = AuthToken.objects.create(user=cast["alice"])
    codes = []
    for _ in range(3 * RATE):
        # A new connection each time: gunicorn hands connections to either worker.
        with httpx.Client(headers={"Authorization": f"Token {token}"}) as client:
            codes.append(client.post(two_workers + "/detect", json={"text": ""}).status_code)
    assert codes[:RATE] == [400] * RATE  # counted (the empty text is refused after the count)
    assert codes[RATE:] == [429] * (2 * RATE)
