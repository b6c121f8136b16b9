"""The playground's pages and rules without a model: permission, key choice, failures of the
generator (down, slow, overloaded), stored replies, check and edit-and-check (the key file,
the meter and the client have their own files). Streaming from the real generator is in
test_embedded.py."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.urls import reverse
from django.utils import timezone

from provenance.checks.models import Check
from provenance.keys.services import key_create, key_retire
from provenance.playground import services
from provenance.playground.models import Conversation, Message
from provenance.runner.redis_server import free_port
from tests.provenance.playground.replies import grant
from tests.provenance.playground.replies import stored_reply as _reply


@pytest.fixture
def bob(client, cast):
    grant(cast["bob"])
    client.force_login(cast["bob"])
    return client


@pytest.fixture
def conversation(cast):
    return Conversation.objects.create(team=cast["acme"], user=cast["bob"])


@pytest.fixture
def generator_at(settings):
    """generator_at(url): point the playground at a generator, with short timeouts."""

    def point(url: str, read_timeout: int = 1) -> None:
        settings.PROVENANCE_PLAYGROUND = {
            **settings.PROVENANCE_PLAYGROUND,
            "GENERATOR_URL": url,
            "CONNECT_TIMEOUT": 1,
            "READ_TIMEOUT": read_timeout,
        }

    return point


def events(response) -> list[dict]:
    body = b"".join(response.streaming_content).decode()
    return [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]


def send(client, conversation, key, content="Tell me about cats.", **extra):
    form = {
        "content": content,
        "key": key.pk,
        "watermark": "on",
        "temperature": "1",
        "top_p": "1",
        "max_tokens": "20",
        **extra,
    }
    return client.post(reverse("playground-reply", args=[conversation.pk]), form)


# --- permissions -------------------------------------------------------------------------


def test_charlie_without_the_permission_gets_403_everywhere(client, cast, alice_key):
    client.force_login(cast["charlie"])
    mine = Conversation.objects.create(team=cast["other"], user=cast["charlie"])
    reply = Message.objects.create(conversation=mine, role="assistant", content="hi")
    assert client.get(reverse("playground")).status_code == 403
    assert client.post(reverse("playground")).status_code == 403
    assert client.get(reverse("playground-conversation", args=[mine.pk])).status_code == 403
    assert send(client, mine, alice_key).status_code == 403
    assert client.post(reverse("playground-check", args=[reply.pk])).status_code == 403
    assert client.get(reverse("api-playground-reply", args=[reply.pk])).status_code == 403
    assert Message.objects.count() == 1 and Check.objects.count() == 0


def test_the_playground_needs_a_login(client, db):
    response = client.get(reverse("playground"))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_nav_link_shows_only_with_the_permission(client, cast):
    client.force_login(cast["alice"])
    assert reverse("playground") not in client.get("/").content.decode()
    grant(cast["alice"])
    assert reverse("playground") in client.get("/").content.decode()


def test_the_key_selector_lists_only_the_teams_active_keys(bob, cast, alice_key, tokenizer_row):
    retired, _ = key_create(name="acme-old", team=cast["acme"], tokenizer=tokenizer_row)
    key_retire(key=retired)
    key_create(name="other-shared", team=cast["other"], tokenizer=tokenizer_row, shared=True)
    conversation = Conversation.objects.create(team=cast["acme"], user=cast["bob"])
    page = bob.get(reverse("playground-conversation", args=[conversation.pk])).content.decode()
    options = page.split('id="id_key"')[1].split("</select>")[0]
    assert "acme-main" in options
    assert "acme-old" not in options and "other-shared" not in options


def test_bob_cannot_pick_a_key_of_another_team(bob, cast, conversation, tokenizer_row):
    theirs, _ = key_create(name="other-main", team=cast["other"], tokenizer=tokenizer_row)
    response = send(bob, conversation, theirs)
    assert response.status_code == 403
    assert "your team" in response.json()["error"]
    assert not conversation.messages.exists()


def test_a_retired_key_cannot_be_picked(bob, conversation, alice_key):
    key_retire(key=alice_key)
    assert send(bob, conversation, alice_key).status_code == 403


def test_a_conversation_is_private_to_its_user(client, cast, conversation, alice_key):
    grant(cast["alice"])
    client.force_login(cast["alice"])
    assert client.get(reverse("playground-conversation", args=[conversation.pk])).status_code == 404
    assert send(client, conversation, alice_key).status_code == 404
    assert client.get("/playground/c/not-an-id/").status_code == 404


def test_a_new_conversation_opens_the_chat_page(bob, cast, alice_key):
    response = bob.post(reverse("playground"))
    assert response.status_code == 302
    page = bob.get(response["Location"]).content.decode()
    assert 'id="chat-form"' in page and "playground.js" in page
    assert "<script>" not in page and " on" + "click=" not in page  # CSP: files only


@pytest.mark.parametrize(
    "field,value",
    [
        ("temperature", "hot"),
        ("temperature", "9"),
        ("top_p", "0"),
        ("max_tokens", "0"),
        ("max_tokens", "100000"),
        ("max_tokens", "2.5"),
    ],
)
def test_bad_sampling_settings_are_refused_clearly(bob, conversation, alice_key, field, value):
    response = send(bob, conversation, alice_key, **{field: value})
    assert response.status_code == 400
    assert response.json()["error"]
    assert not conversation.messages.exists()


def test_an_empty_message_is_refused(bob, conversation, alice_key):
    assert send(bob, conversation, alice_key, content="  ").status_code == 400


# --- a generator that fails ----------------------------------------------------------------


def _closed_port() -> int:
    return free_port()


def test_a_generator_that_is_down_gives_a_clear_error_and_keeps_the_turn(
    bob, conversation, alice_key, generator_at
):
    generator_at(f"http://127.0.0.1:{_closed_port()}")
    response = send(bob, conversation, alice_key)
    assert response["Content-Type"] == "text/event-stream"
    last = events(response)[-1]
    assert last["type"] == "error" and last["kind"] == "down" and last["retry"]
    assert "not reachable" in last["error"]
    user, reply = conversation.messages.order_by("created_at")
    assert user.content == "Tell me about cats." and user.role == "user"
    assert reply.status == "failed" and "not reachable" in reply.error


def test_retry_asks_again_for_the_last_turn_without_repeating_it(
    bob, conversation, alice_key, generator_at
):
    generator_at(f"http://127.0.0.1:{_closed_port()}")
    events(send(bob, conversation, alice_key))
    events(send(bob, conversation, alice_key, content=""))  # the page's Retry button
    roles = list(conversation.messages.order_by("created_at").values_list("role", "status"))
    assert roles == [("user", "done"), ("assistant", "failed"), ("assistant", "failed")]


class _Silent(BaseHTTPRequestHandler):
    """A generator that accepts the request and never answers (hung or swamped) while the
    test runs."""

    def do_POST(self) -> None:  # noqa: N802
        self.server.released.wait(30)  # type: ignore[attr-defined]

    def log_message(self, *args) -> None:
        pass


class _Overloaded(_Silent):
    def do_POST(self) -> None:  # noqa: N802
        body = json.dumps({"error": {"message": "overloaded"}}).encode()
        self.send_response(503)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def fake_server():
    servers = []

    def start(handler) -> str:
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        server.released = threading.Event()  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.released.set()  # type: ignore[attr-defined]
        server.shutdown()
        server.server_close()


def test_a_silent_generator_times_out_instead_of_holding_the_worker(
    bob, conversation, alice_key, generator_at, fake_server
):
    generator_at(fake_server(_Silent), read_timeout=1)
    started = time.monotonic()
    last = events(send(bob, conversation, alice_key))[-1]
    assert time.monotonic() - started < 4
    assert last["type"] == "error" and last["kind"] == "timeout"
    assert "busy or slow" in last["error"]
    assert conversation.messages.filter(role="user").count() == 1


def test_an_overloaded_generator_says_so(bob, conversation, alice_key, generator_at, fake_server):
    generator_at(fake_server(_Overloaded))
    last = events(send(bob, conversation, alice_key))[-1]
    assert last["type"] == "error" and last["kind"] == "busy" and "overloaded" in last["error"]


def test_too_many_open_streams_are_refused_not_queued(
    bob, conversation, alice_key, settings, monkeypatch
):
    settings.PROVENANCE_PLAYGROUND = {**settings.PROVENANCE_PLAYGROUND, "MAX_STREAMS": 1}
    monkeypatch.setattr(services, "_streams_open", 1)
    last = events(send(bob, conversation, alice_key))[-1]
    assert last["type"] == "error" and last["kind"] == "busy"


def test_a_reply_left_streaming_by_a_dead_process_is_marked_failed(
    bob, conversation, alice_key, generator_at
):
    generator_at(f"http://127.0.0.1:{_closed_port()}")
    orphan = Message.objects.create(conversation=conversation, role="assistant", status="streaming")
    Message.objects.filter(pk=orphan.pk).update(created_at=timezone.now() - timedelta(hours=1))
    events(send(bob, conversation, alice_key))
    orphan.refresh_from_db()
    assert orphan.status == "failed" and orphan.error == "interrupted"


# --- stored replies, check and edit-and-check ---------------------------------------------------


def test_check_this_reply_opens_the_check_of_its_text(bob, conversation, alice_key):
    reply = _reply(conversation, alice_key, "The reply text.")
    response = bob.post(reverse("playground-check", args=[reply.pk]))
    check = Check.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("check-detail", args=[check.pk])
    assert check.text == "The reply text." and check.key_ids == [str(alice_key.pk)]


def test_edit_and_check_checks_the_edited_text(bob, conversation, alice_key):
    reply = _reply(conversation, alice_key, "The reply text.")
    page = bob.get(reverse("playground-edit", args=[reply.pk])).content.decode()
    assert "The reply text." in page
    bob.post(reverse("playground-check", args=[reply.pk]), {"text": "An edited text."})
    assert Check.objects.get().text == "An edited text."


def test_edit_and_check_refuses_an_empty_text(bob, conversation, alice_key):
    reply = _reply(conversation, alice_key, "The reply text.")
    response = bob.post(reverse("playground-check", args=[reply.pk]), {"text": " "})
    assert response.status_code == 400 and "empty" in response.content.decode()


def test_the_meters_hint_names_the_streams_own_line(bob, conversation, alice_key, monkeypatch):
    """The hint's significance line is the e-process's (``detector.evidence.stream``), the
    line its running verdict flags at, not a figure of the page's."""
    from detector.evidence import stream

    url = reverse("playground-conversation", args=[conversation.pk])
    assert "(below -2.0 is significant" in bob.get(url).content.decode()  # threshold 0.01
    monkeypatch.setattr(stream, "flag_line_log10", lambda threshold: -3.5)
    assert "(below -3.5 is significant" in bob.get(url).content.decode()
