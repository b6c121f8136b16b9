"""The secret key value never leaves the encrypted column: every page, every API answer,
every log line, every Celery message and the worker's log are scanned for its decimal and
hex forms. The one exception is the answer that creates a key, which shows it once."""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
import uuid
from collections import deque
from urllib.parse import urljoin, urlsplit

import pytest
import redis

from provenance.accounts.services import membership_set, user_create
from provenance.audits.models import Audit
from provenance.checks.models import Check
from tests.provenance.conftest import KEY_VALUE
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

FORMS = {
    str(KEY_VALUE),
    f"{KEY_VALUE:x}",
    f"{KEY_VALUE:016x}",
    f"{KEY_VALUE & 0xFFFFFFFF}",  # the Philox key words are secrets too
    f"{KEY_VALUE >> 32}",
    f"{KEY_VALUE & 0xFFFFFFFF:08x}",
    f"{KEY_VALUE >> 32:08x}",
}


def _leaks(text: str) -> list[str]:
    lowered = text.lower()
    return [form for form in FORMS if form in lowered]


class RedisMonitor:
    """Records every command the Redis server receives (Celery messages included)."""

    def __init__(self, url: str):
        self.client = redis.Redis.from_url(url)
        self.seen: list[str] = []
        self.stopped = threading.Event()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with self.client.monitor() as monitor:
            self.ready.set()  # MONITOR answered OK: every later command is seen
            for command in monitor.listen():
                self.seen.append(str(command.get("command", "")))
                if self.stopped.is_set():
                    return

    def __enter__(self) -> RedisMonitor:
        self.thread.start()
        assert self.ready.wait(10), "MONITOR did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.client.ping()  # wakes the monitor loop up so that it sees the flag
        self.thread.join(5)


def _crawl(client, start: list[str], limit: int = 250) -> dict[str, str]:
    """Breadth-first over same-site links; returns url -> body."""
    seen: dict[str, str] = {}
    queue = deque(start)
    while queue and len(seen) < limit:
        url = queue.popleft()
        if url in seen or any(skip in url for skip in ("/logout", "/delete/", "/static/")):
            continue
        response = client.get(url)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        seen[url] = body.decode("utf-8", "replace")
        if response.status_code == 200 and "html" in response.get("Content-Type", ""):
            for href in re.findall(r'href="([^"#]+)"', seen[url]):
                target = urljoin(url, href.replace("&amp;", "&"))
                if not urlsplit(target).netloc:
                    queue.append(target)
    return seen


def test_no_page_api_answer_log_or_message_shows_the_key(
    celery_worker, redis_server, cast, alice_key, api_for, client, wm_text, human_text, caplog
):
    caplog.set_level(logging.DEBUG)
    root = user_create(username="root", password="root-pass-123", is_staff=True, is_superuser=True)
    membership_set(user=root, team=cast["acme"])
    alice = api_for("alice")
    with RedisMonitor(redis_server.url) as monitor:
        check_id = alice.post("/api/v1/checks", {"text": wm_text}, format="json").json()["id"]
        items = [{"client_id": "a", "text": wm_text}, {"client_id": "b", "text": human_text}]
        audit_id = alice.post("/api/v1/audits", {"texts": items}, format="json").json()["id"]
        wait_until(lambda: Audit.objects.get(id=audit_id).status == "done", 60)
        wait_until(lambda: Check.objects.get(id=check_id).status == "done", 60)
    assert Check.objects.get(id=check_id).is_watermarked  # the key really was used

    answers = {
        "detect": alice.post("/detect", {"text": wm_text}, format="json").content.decode(),
        "bad-detect": alice.post("/detect", {"text": ""}, format="json").content.decode(),
        "bad-key": alice.post(
            "/api/v1/checks", {"text": "x", "key_ids": [str(uuid.uuid4())]}, format="json"
        ).content.decode(),
    }
    client.force_login(root)
    pages = _crawl(
        client,
        [
            "/",
            f"/checks/{check_id}/",
            "/checks/",
            "/audits/",
            f"/audits/{audit_id}/",
            "/keys/",
            "/api/docs/",
            "/api/schema/",
            "/admin/",
            f"/admin/keys/watermarkkey/{alice_key.id}/change/",
            f"/admin/checks/check/{check_id}/change/",
            "/api/v1/checks",
            f"/api/v1/checks/{check_id}",
            "/api/v1/audits",
            f"/api/v1/audits/{audit_id}",
            f"/api/v1/audits/{audit_id}/items",
            f"/api/v1/audits/{audit_id}/export.csv",
            f"/api/v1/audits/{audit_id}/export.json",
            "/api/v1/keys",
            f"/api/v1/keys/{alice_key.id}",
        ],
    )
    assert len(pages) > 40  # the crawl really walked the admin too
    assert '"is_watermarked": true' in json.dumps(json.loads(answers["detect"]))
    for name, body in {**pages, **answers}.items():
        assert not _leaks(body), name
    assert not _leaks("\n".join(record.getMessage() for record in caplog.records))
    assert not _leaks(caplog.text)
    assert any("score_check" in command for command in monitor.seen)  # messages were seen
    bodies = _message_bodies(monitor.seen)
    assert bodies and not _leaks("\n".join(monitor.seen) + "\n".join(map(str, bodies)))
    for args, kwargs, _ in bodies:  # tasks carry ids only
        assert kwargs == {} and all(_only_ids(arg) for arg in args)
    assert not _leaks(celery_worker.log_path.read_text())


def _message_bodies(commands: list[str]) -> list:
    """Celery's Redis transport stores each message body base64-encoded: decode them."""
    found = set()
    for command in commands:
        found.update(re.findall(r'"body": "([A-Za-z0-9+/=]+)"', command))
    return [json.loads(base64.b64decode(body)) for body in sorted(found)]


def _only_ids(value: object) -> bool:
    if isinstance(value, list):
        return all(_only_ids(item) for item in value)
    try:
        return isinstance(value, str) and str(uuid.UUID(value)) == value
    except ValueError:
        return False
