"""The PostgreSQL backend's check of a kept connection: a connection the server ended is
dropped and opened again before the request's first statement, a healthy one is kept, and
neither costs a statement (Django's check would send SELECT 1 on every request)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import psycopg
import pytest
from django.db.utils import ConnectionHandler

from provenance.lib.postgresql import database_settings
from provenance.lib.postgresql.base import DatabaseWrapper, hung_up

SHOW_DATABASE = """
import json
from provenance.settings import DATABASES
db = DATABASES["default"]
print(json.dumps([db["ENGINE"], db["CONN_MAX_AGE"], db["CONN_HEALTH_CHECKS"]]))
"""


@pytest.fixture
def kept(own_postgres, monkeypatch, django_db_blocker):
    """A connection configured as the settings configure it (kept 60 s, checked), that
    fails the test if Django's SELECT 1 check runs; not the test database's (pytest-django's
    block, which guards that one, is lifted)."""
    handler = ConnectionHandler({"default": database_settings(own_postgres.url, conn_max_age=60)})
    connection = handler["default"]
    assert isinstance(connection, DatabaseWrapper)

    def no_round_trip() -> bool:
        raise AssertionError("the check sent a statement")

    monkeypatch.setattr(connection, "is_usable", no_round_trip)
    with django_db_blocker.unblock():
        yield connection
        connection.close()


def _request(connection) -> int:
    """What a request does: Django's close_old_connections, then a statement."""
    connection.close_if_unusable_or_obsolete()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def _terminate(server, pid: int) -> None:
    with psycopg.connect(server.url, autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)


def test_a_healthy_kept_connection_is_reused(kept):
    first = _request(kept)
    raw = kept.connection
    assert [_request(kept) for _ in range(5)] == [first] * 5 and kept.connection is raw


def test_a_connection_the_server_ended_is_replaced_before_the_first_statement(kept, own_postgres):
    first = _request(kept)
    _terminate(own_postgres, first)
    deadline = time.monotonic() + 5
    while not hung_up(kept.connection) and time.monotonic() < deadline:
        time.sleep(0.01)  # the server's goodbye is on its way
    second = _request(kept)
    assert second != first and _request(kept) == second


def test_a_connection_inside_a_transaction_is_left_to_its_statements(kept):
    first = _request(kept)
    kept.close_if_unusable_or_obsolete()
    with kept.cursor() as cursor:  # the check ran; a transaction opens on this connection
        cursor.execute("BEGIN")
        cursor.execute("SELECT 1")
    assert not hung_up(kept.connection)  # in a transaction: not polled
    with kept.cursor() as cursor:
        cursor.execute("ROLLBACK")
    assert _request(kept) == first


@pytest.mark.parametrize(
    ("url", "engine"),
    [
        ("postgres://u@db.example:5432/p", "provenance.lib.postgresql"),
        ("sqlite:////tmp/provenance-settings.sqlite3", "django.db.backends.sqlite3"),
    ],
)
def test_the_settings_check_kept_connections_with_this_backend_on_postgresql(url, engine):
    """Read in a fresh interpreter: the test database's settings are the suite's own."""
    shown = subprocess.run(
        [sys.executable, "-c", SHOW_DATABASE],
        env={**os.environ, "DATABASE_URL": url, "DATABASE_CONN_MAX_AGE": ""},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert json.loads(shown.stdout) == [engine, 60, True]
