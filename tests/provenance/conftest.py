"""Fixtures for the web product: the cast (alice and bob on one team, charlie outside),
a registered key with a known value, a real Redis server and a real Celery worker process."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from django.conf import settings
from knox.models import AuthToken
from rest_framework.test import APIClient

from provenance.accounts.services import team_create, user_create
from provenance.i18n import compile_catalogs
from provenance.keys.services import key_create, tokenizer_default
from provenance.lib.postgresql import ENGINE as POSTGRESQL_ENGINE
from provenance.lib.postgresql import database_settings
from provenance.runner.processes import stop_process
from provenance.runner.redis_server import RedisServer
from tests.provenance import capture
from tests.provenance import chromium as chromium_browser
from tests.provenance.postgres_server import PostgresServer, PostgresStartError
from tests.provenance.watermark import HUMAN_TEXT, watermarked_text
from tests.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]
# One KEK for the whole session, shared with the worker process (never the developer's file).
TEST_KEK = Fernet.generate_key().decode()
settings.PROVENANCE_KEK = TEST_KEK
# Model-assisted detection off, here and in every process the tests start (workers, the
# embedded runner): a SmolLM2 forward pass per check would slow every worker test down. Its
# own tests (scoring/test_service.py) turn it on for their worker.
os.environ.setdefault("PROVENANCE_MODEL_ASSIST", "0")
settings.PROVENANCE_MODEL_ASSIST = os.environ["PROVENANCE_MODEL_ASSIST"] != "0"
# The cast is created for every test: a deliberately slow password hash would dominate.
settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# The UI's catalogs (make setup compiles them too; a .po edited since is compiled again).
compile_catalogs()
# Everything the product says during the session is kept for the secret scan.
capture.install(settings)
# A fixed, random-looking 64-bit value: the secret scans look for its forms, and fixed, the
# statistical outcomes of the tests are fixed too (a text checked against it gets the same
# p-value in every run, so "not watermarked" assertions cannot fail one run in a hundred).
KEY_VALUE = int.from_bytes(hashlib.sha256(b"provenance test key").digest()[:8], "big") | (1 << 63)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The secret scan (marker ``secret_scan``) searches everything the other tests produced,
    so it runs after all of them, whatever the files are called; the rest keep their order."""
    items.sort(key=lambda item: item.get_closest_marker("secret_scan") is not None)


@pytest.fixture(autouse=True)
def _fresh_throttle_history() -> None:
    # Row ids repeat across tests (rolled back), so "alice" accumulates request history in
    # the throttle's cache over the session; each test starts with none.
    from django.core.cache import cache

    cache.clear()


# PROVENANCE_TEST_DB=postgresql runs this suite on a throwaway PostgreSQL server (make test
# runs it both ways); the default is SQLite, the embedded default.
TEST_DB = os.environ.get("PROVENANCE_TEST_DB", "") or "sqlite"
if TEST_DB not in ("sqlite", "postgresql"):
    raise ValueError(f"PROVENANCE_TEST_DB must be sqlite or postgresql, got {TEST_DB!r}")


def on_postgresql() -> bool:
    return settings.DATABASES["default"]["ENGINE"] == POSTGRESQL_ENGINE


def _use_database(url: str) -> None:
    """Point the default connection at ``url`` before anything has opened it."""
    from django.db import connections

    db = settings.DATABASES["default"]
    db.clear()
    db.update(database_settings(url, conn_max_age=0))
    connections.configure_settings(settings.DATABASES)  # defaults (TEST, OPTIONS, ...)
    try:
        connections["default"].close()
        del connections["default"]
    except AttributeError:  # never opened
        pass


@pytest.fixture(scope="module")
def own_postgres():
    """A PostgreSQL server of the test module's own, beside the test database, whichever
    that is: a test may cut its connections."""
    try:
        server = PostgresServer().start()
    except PostgresStartError as exc:
        pytest.fail(f"PostgreSQL did not start: {exc}")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(tmp_path_factory: pytest.TempPathFactory):
    db = settings.DATABASES["default"]
    if TEST_DB == "postgresql":
        server = PostgresServer().start()
        _use_database(server.url)
        yield
        server.stop()
        return
    # A file database, not SQLite's in-memory default: the worker process must see it.
    if db["ENGINE"] == "django.db.backends.sqlite3":
        db.setdefault("TEST", {})["NAME"] = str(tmp_path_factory.mktemp("db") / "test.sqlite3")
    yield


@pytest.fixture(scope="session")
def wm_text() -> str:
    return watermarked_text(KEY_VALUE, num_tokens=160, seed=1)


@pytest.fixture(scope="session")
def human_text() -> str:
    return HUMAN_TEXT


@pytest.fixture
def cast(db):
    """alice owns the data, bob is on her team, charlie is on another team."""
    # Both at the auditor tier (a new team starts basic): the tests read exact answers.
    acme = team_create(name="acme", oracle_tier="auditor")
    other = team_create(name="other", oracle_tier="auditor")
    return {
        "acme": acme,
        "other": other,
        "alice": user_create(username="alice", password="alice-pass-123", team=acme),
        "bob": user_create(username="bob", password="bob-pass-123", team=acme),
        "charlie": user_create(username="charlie", password="charlie-pass-123", team=other),
    }


@pytest.fixture
def tokenizer_row(db):
    return tokenizer_default()


@pytest.fixture
def alice_key(cast, tokenizer_row):
    key, _ = key_create(
        name="acme-main", team=cast["acme"], tokenizer=tokenizer_row, value=KEY_VALUE
    )
    return key


@pytest.fixture
def api_for(cast):
    """api_for("alice") -> an APIClient authenticated with alice's token."""

    tokens: dict[str, str] = {}

    def make(name: str) -> APIClient:
        client = APIClient()
        if name not in tokens:
            _, tokens[name] = AuthToken.objects.create(user=cast[name])
        client.credentials(HTTP_AUTHORIZATION=f"Token {tokens[name]}")
        return client

    return make


@pytest.fixture(scope="session")
def chromium(tmp_path_factory: pytest.TempPathFactory):
    """One headless Chromium for the session's browser tests: its DevTools endpoint
    (tests/provenance/chromium.py). Its log joins the scan."""
    if not os.path.exists(chromium_browser.CHROMIUM):
        pytest.skip("Debian's chromium is not installed")
    directory = tmp_path_factory.mktemp("chromium")
    process, endpoint = chromium_browser.start(directory)
    capture.files.append(directory / "chromium.log")
    yield endpoint
    chromium_browser.stop(process)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory):
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


def point_celery_at(url: str) -> None:
    """Send this process's task messages to ``url`` (drops pooled connections to another)."""
    from provenance.celery import app

    app.conf.broker_url = url
    app._pool = None
    app.amqp._producer_pool = None


def database_url() -> str:
    """The test database (created by then) as a DATABASE_URL for a child process."""
    db = settings.DATABASES["default"]
    if on_postgresql():
        return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    return f"sqlite:///{db['NAME']}"


def worker_env(redis_url: str, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": database_url(),
        "REDIS_URL": redis_url,
        "PROVENANCE_KEK": TEST_KEK,
        "OMP_NUM_THREADS": "1",
        # Webhook tests run their receiver on 127.0.0.1, retried after 1 s, 2 s, ...
        "PROVENANCE_WEBHOOK_ALLOW_PRIVATE": "1",
        "PROVENANCE_WEBHOOK_BACKOFF": "1",
        **extra,
    }


def spawn_worker(redis_url: str, log: Path, name: str = "session", **env: str) -> subprocess.Popen:
    """A real worker process (solo pool) named ``name@host``, ready to take tasks; its log
    joins the scan. A worker started under the name of a running one replaces it. ``env``:
    extra environment variables."""
    args = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "provenance",
        "worker",
        "-n",
        f"{name}@%h",
        "--pool=solo",
        "--concurrency=1",
        "--loglevel=INFO",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]
    with log.open("ab") as out:
        start = log.stat().st_size
        worker = subprocess.Popen(
            args, cwd=REPO, env=worker_env(redis_url, **env), stdout=out, stderr=subprocess.STDOUT
        )
    try:
        wait_until(
            lambda: b"ready." in log.read_bytes()[start:],
            60,
            0.1,
            alive=lambda: worker.poll() is None,
            what=lambda: f"worker ready:\n{log.read_text()[-3000:]}",
        )
    except AssertionError:
        worker.kill()
        raise
    worker.log_path = log  # type: ignore[attr-defined]
    capture.files.append(log)
    return worker


@pytest.fixture(scope="session")
def celery_worker(django_db_setup, django_db_blocker, redis_server, tmp_path_factory):
    """A real worker process (solo pool) on the test database and the test Redis."""
    point_celery_at(redis_server.url)
    worker = spawn_worker(redis_server.url, tmp_path_factory.mktemp("worker") / "worker.log")
    yield worker
    stop_process(worker, timeout=20)


@pytest.fixture
def published_tasks(monkeypatch) -> list[tuple[str, tuple]]:
    """The task messages this test sends to the broker (name, arguments): none leaves the
    process."""
    from provenance.checks import queue
    from provenance.keys import calibration
    from provenance.webhooks import services as webhooks

    sent: list[tuple[str, tuple]] = []
    for publisher in (queue, calibration, webhooks):  # each publishes by name
        monkeypatch.setattr(
            publisher, "publish", lambda name, *args: sent.append((name, args)) or True
        )
    return sent


@pytest.fixture(scope="module")
def quiet_redis(tmp_path_factory):
    """A Redis no worker consumes from: what the sweeper queues stays there to be seen."""
    from provenance.celery import app

    previous = app.conf.broker_url
    server = RedisServer(tmp_path_factory.mktemp("recovery-redis")).start()
    point_celery_at(server.url)
    yield server
    server.stop()
    point_celery_at(previous)


@pytest.fixture
def no_current_worker(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No worker registered in this process before the test, nor a beating thread after it
    (the tests of a worker's Celery signals)."""
    from provenance.heartbeats import services, tasks

    monkeypatch.setattr(services, "_current", None)
    monkeypatch.setattr(tasks, "_heartbeat", None)
    yield
    if tasks._heartbeat is not None:
        tasks._heartbeat.stop()
        tasks._heartbeat.join(5)
