"""A client polling an audit on one keep-alive connection is never dropped, however long it
waits between polls within what the product tells it (the audit page's 2 s, a 503's
``Retry-After: 5``), while other clients keep the same web process busy.

``make run``'s web is started from the runner's own command line. gunicorn's default
keep-alive (2 s) closed an idle connection when its main loop next woke after 2 s: under
load, at once, so a poll sent every 2 s met a connection being closed ("Server disconnected
without sending a response"), and any longer wait found it closed. Python's ``http.client``
reuses its one connection without checking it first (as a client does when its request
crosses the server's close), so every close shows here as an error, not only the unlucky
ones.
"""

from __future__ import annotations

import http.client
import threading
import time
from urllib.parse import urlsplit

import httpx
import pytest
from knox.models import AuthToken

from provenance.audits.models import Audit
from tests.provenance.conftest import worker_env
from tests.provenance.web_server import gunicorn_as_run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
GAPS_S = (2.0, 2.0, 2.0, 5.0)  # between polls: the audit page's refresh, then Retry-After
LOAD_CLIENTS = 2  # other clients, each sending requests back to back on their own connection


@pytest.fixture
def web(redis_server, tmp_path, monkeypatch):
    # One process, so that the load and the poller meet in the same gunicorn worker.
    monkeypatch.setenv("PROVENANCE_WEB_WORKERS", "1")
    monkeypatch.setenv("PROVENANCE_WEB_THREADS", "4")
    env = worker_env(
        redis_server.url, PROVENANCE_CACHE_URL=redis_server.url, DJANGO_ALLOWED_HOSTS="127.0.0.1"
    )
    with gunicorn_as_run(env, tmp_path / "gunicorn.log") as url:
        yield url


def _load(url: str, stop: threading.Event, answered: list[int]) -> None:
    with httpx.Client(base_url=url, timeout=30) as client:
        while not stop.is_set():
            answered.append(client.get("/healthz").status_code)


def test_a_client_polling_an_audit_keeps_its_connection_under_load(web, cast):
    alice = cast["alice"]
    audit = Audit.objects.create(
        team=cast["acme"], submitted_by=alice, request_hash="h", num_texts=1, key_ids=[],
        threshold=0.01,
    )  # fmt: skip
    _, token = AuthToken.objects.create(user=alice)
    address = urlsplit(web)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    stop, load = threading.Event(), []
    threads = [
        threading.Thread(target=_load, args=(web, stop, load), daemon=True)
        for _ in range(LOAD_CLIENTS)
    ]
    polls: list[str] = []
    local_ports = set()
    try:
        for thread in threads:
            thread.start()
        for gap in (0.0, *GAPS_S):
            time.sleep(gap)
            try:
                connection.request(
                    "GET", f"/api/v1/audits/{audit.id}", headers={"Authorization": f"Token {token}"}
                )
                response = connection.getresponse()
                body = response.read()
                polls.append(f"{response.status} after {gap:g} s")
                assert b'"id"' in body
                local_ports.add(connection.sock.getsockname()[1])
            except (http.client.HTTPException, OSError) as exc:
                polls.append(f"{type(exc).__name__} after {gap:g} s")
                connection.close()  # the next poll opens a new connection
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
        connection.close()
    assert polls == [f"200 after {gap:g} s" for gap in (0.0, *GAPS_S)]
    assert len(local_ports) == 1  # one connection, never closed by the server
    assert len(load) > 10 * len(GAPS_S) and set(load) == {200}  # the server was kept busy
