"""PostgreSQL restarted under a running web: once it is back, no request fails. Every web
thread keeps its connection (DATABASE_CONN_MAX_AGE); a restart breaks them all, and a
connection is tested before a request reuses it instead of failing that request with a 503
(the compose deployment's restart step met one such 503 a while after the first answer)."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import httpx
import psycopg
import pytest

from tests.provenance.conftest import REPO, worker_env
from tests.provenance.web_server import gunicorn

pytestmark = pytest.mark.slow
SETUP = """
import django; django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from knox.models import AuthToken
from provenance.accounts.services import team_create, user_create
team = team_create(name="restart")
user = user_create(username="restart", password="restart-pass-123", team=team)
print(AuthToken.objects.create(user=user)[1])
"""
THREADS = 8  # 2 gunicorn workers x 4 threads: each thread holds its own connection


@pytest.fixture
def web(own_postgres, redis_server, tmp_path):
    env = worker_env(
        redis_server.url, DATABASE_URL=own_postgres.url, DJANGO_ALLOWED_HOSTS="127.0.0.1"
    )
    setup = subprocess.run(
        [sys.executable, "-c", SETUP],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert setup.returncode == 0, setup.stderr[-3000:]
    token = setup.stdout.strip().splitlines()[-1]
    with gunicorn(env, tmp_path / "gunicorn.log", "--workers", "2", "--threads", "4") as url:
        yield url, token


def _statuses(url: str, token: str, rounds: int) -> list[int]:
    """``rounds`` x THREADS authenticated reads, THREADS at a time, each on its own TCP
    connection (gunicorn hands each to any worker and thread)."""

    def one(_: int) -> int:
        with httpx.Client(headers={"Authorization": f"Token {token}"}, timeout=30) as client:
            return client.get(url + "/api/v1/checks?limit=1").status_code

    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(one, range(rounds * THREADS)))


def test_after_the_database_cuts_every_connection_no_request_fails(own_postgres, web):
    url, token = web
    assert _statuses(url, token, 4) == [200] * 4 * THREADS  # the threads hold connections
    with psycopg.connect(own_postgres.url, autocommit=True) as admin:
        cut = admin.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'"
        ).fetchone()
    assert cut is not None and cut[0] >= 1  # what a restart does to the web's connections
    assert _statuses(url, token, 6) == [200] * 6 * THREADS
