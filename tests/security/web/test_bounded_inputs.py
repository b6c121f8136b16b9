"""Bounded inputs: a request cannot pin a web worker with thousands of key ids, nor grow a
stream without bound with text that never reaches a word boundary."""

from __future__ import annotations

import time
import uuid

import pytest

from provenance.keys.selectors import KeySelectionError, keys_for_check
from provenance.streams.models import Stream
from provenance.usage.models import QuotaUsage

pytestmark = pytest.mark.django_db

ROUTES = ["/api/v1/checks", "/api/v1/audits", "/api/v1/streams"]


def _body(route: str, key_ids: list[str]) -> dict:
    if route == "/api/v1/checks":
        return {"text": "a short text", "key_ids": key_ids}
    if route == "/api/v1/audits":
        return {"texts": [{"client_id": "a", "text": "a short text"}], "key_ids": key_ids}
    return {"key_ids": key_ids}


@pytest.mark.parametrize("route", ROUTES)
def test_twenty_thousand_key_ids_are_refused_at_once_without_echoing_them(
    api_for, alice_key, route, settings
):
    ids = [str(uuid.uuid4()) for _ in range(20_000)]
    started = time.perf_counter()
    response = api_for("alice").post(route, _body(route, ids), format="json")
    elapsed = time.perf_counter() - started
    assert response.status_code == 400
    assert len(response.content) < 1000 and ids[0] not in response.content.decode()
    assert f"at most {settings.PROVENANCE_MAX_KEY_IDS} key ids" in response.content.decode()
    assert elapsed < 3.0  # the quadratic de-duplication took 9 s for these


@pytest.mark.parametrize("route", ROUTES)
def test_the_cap_is_a_setting(api_for, alice_key, route, settings):
    settings.PROVENANCE_MAX_KEY_IDS = 2
    client = api_for("alice")
    ok = client.post(route, _body(route, [str(alice_key.id)] * 2), format="json")
    assert ok.status_code in (200, 201, 202), ok.content
    refused = client.post(route, _body(route, [str(alice_key.id)] * 3), format="json")
    assert refused.status_code == 400 and "at most 2 key ids" in refused.content.decode()


def test_bad_ids_are_answered_with_one_short_message(api_for, alice_key):
    response = api_for("alice").post(
        "/api/v1/checks", {"text": "x", "key_ids": ["not-a-uuid"] * 64}, format="json"
    )
    assert response.status_code == 400 and len(response.content) < 300


def test_unknown_ids_are_named_a_few_at_a_time(cast, alice_key):
    missing = [uuid.uuid4() for _ in range(64)]
    with pytest.raises(KeySelectionError) as raised:
        keys_for_check(cast["acme"], missing)
    message = str(raised.value)
    assert str(missing[0]) in message and "and 61 more" in message
    assert str(missing[-1]) not in message


def test_duplicates_are_tested_once_in_order(cast, alice_key):
    assert keys_for_check(cast["acme"], [alice_key.id, str(alice_key.id)] * 32) == [alice_key]


def test_the_service_enforces_the_cap_too(cast, alice_key):
    with pytest.raises(KeySelectionError, match="at most 64 key ids"):
        keys_for_check(cast["acme"], [alice_key.id] * 65)


def _stream(client) -> str:
    response = client.post("/api/v1/streams", {}, format="json")
    assert response.status_code == 201
    return response.json()["id"]


def test_a_five_megabyte_append_without_a_word_boundary_is_refused(api_for, alice_key):
    client = api_for("alice")
    stream_id = _stream(client)
    response = client.post(
        f"/api/v1/streams/{stream_id}/append", {"text": "a" * 5_000_000}, format="json"
    )
    assert response.status_code == 413
    assert Stream.objects.get(id=stream_id).pending_text == ""


def test_stream_appends_are_under_the_body_size_guard(api_for, alice_key, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    client = api_for("alice")
    stream_id = _stream(client)
    response = client.post(
        f"/api/v1/streams/{stream_id}/append", {"token_ids": [1] * 500}, format="json"
    )
    assert response.status_code == 413


def test_pending_text_is_capped(api_for, alice_key, settings):
    settings.PROVENANCE_STREAM_MAX_PENDING = 100
    client = api_for("alice")
    stream_id = _stream(client)
    for _ in range(5):
        response = client.post(
            f"/api/v1/streams/{stream_id}/append", {"text": "b" * 60}, format="json"
        )
        assert response.status_code == 200
    stream = Stream.objects.get(id=stream_id)
    assert len(stream.pending_text) <= 100 and stream.num_tokens > 0


def test_pending_text_counts_against_the_quota(api_for, alice_key, settings):
    settings.PROVENANCE_DAILY_QUOTA = 3
    client = api_for("alice")
    stream_id = _stream(client)
    codes = [
        client.post(f"/api/v1/streams/{stream_id}/append", {"text": "x"}, format="json").status_code
        for _ in range(4)
    ]
    assert codes == [200, 200, 200, 429]
    assert QuotaUsage.objects.get().used == 3


def test_a_user_cannot_hold_more_than_the_waiting_limit_of_web_threads(
    api_for, cast, alice_key, wm_text, settings, monkeypatch
):
    """``?wait=`` on a check the worker scores takes one of the user's waiting slots. With
    them taken, such a request is answered at once as queued (202), to be polled, without
    waiting; another user still waits; the slots come back when the waits end. A short text
    scored in the request takes no slot: its thread is held for the scoring alone."""
    from contextlib import ExitStack

    from provenance.checks import selectors
    from provenance.checks.api.base import waiting_slot

    waits: list[tuple[str, float]] = []

    def finished_at_once(check_id: object, *, within: float) -> bool:  # the worker, instantly
        from provenance.checks.services import check_score

        waits.append((str(check_id), within))
        check_score(check_id)
        return True

    monkeypatch.setattr(selectors, "check_finished", finished_at_once)
    settings.PROVENANCE_MAX_WAITING_PER_USER = 2
    alice, bob = api_for("alice"), api_for("bob")
    route = "/api/v1/checks?wait=20"
    with ExitStack() as held:
        granted = [held.enter_context(waiting_slot(cast["alice"], 20.0)) for _ in range(2)]
        assert granted == [20.0, 20.0]
        inline = alice.post(route, {"text": wm_text}, format="json")
        assert inline.status_code == 201 and inline.json()["status"] == "done"
        settings.PROVENANCE_INLINE_MAX_BYTES = 0  # from here every check goes to the worker
        busy = alice.post(route, {"text": wm_text}, format="json")
        assert busy.status_code == 202 and busy.json()["status"] != "done"
        assert waits == []  # answered without waiting
        assert bob.post(route, {"text": wm_text}, format="json").status_code == 201
        assert len(waits) == 1
    assert alice.post(route, {"text": wm_text}, format="json").status_code == 201
    assert len(waits) == 2 and waits[1][1] == 20.0
