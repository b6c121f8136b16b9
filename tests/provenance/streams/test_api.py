"""Streaming detection over the API: open, append, read a state that is valid after every
append; per-user streams; bad input stores nothing; the basic tier sees less."""

from __future__ import annotations

import pytest

from detector.text.tokenizers import load_tokenizer
from provenance.streams.models import Stream
from provenance.usage.models import DetectionLog
from provenance.usage.services import text_sha256
from tests.provenance.conftest import KEY_VALUE
from tests.provenance.watermark import watermarked_ids

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(api_for):
    return api_for("alice")


def _open(client, **body):
    response = client.post("/api/v1/streams", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _append(client, stream_id, **body):
    return client.post(f"/api/v1/streams/{stream_id}/append", body, format="json")


def test_watermarked_tokens_are_flagged_while_they_stream(alice, alice_key):
    stream = _open(alice)
    assert stream["num_tokens"] == 0 and stream["is_watermarked"] is False
    ids = [int(i) for i in watermarked_ids(KEY_VALUE, num_tokens=120, seed=4)]
    states = [
        _append(alice, stream["id"], token_ids=ids[i : i + 10]).json() for i in range(0, 120, 10)
    ]
    assert states[-1]["num_tokens"] == 120 and states[-1]["is_watermarked"] is True
    assert states[-1]["best_key"] == "acme-main" and states[-1]["log10_p_anytime"] < -2
    assert states[0]["log10_p_anytime"] >= states[-1]["log10_p_anytime"]


def test_human_text_streamed_in_deltas_is_not_flagged_and_tokenizes_as_a_whole(
    alice, alice_key, human_text
):
    stream = _open(alice, key_ids=[str(alice_key.id)])
    pieces = [human_text[i : i + 7] for i in range(0, len(human_text), 7)]
    for piece in pieces:
        state = _append(alice, stream["id"], text=piece).json()
    state = _append(alice, stream["id"], text="", final=True).json()
    assert state["closed"] is True and state["is_watermarked"] is False
    assert state["num_tokens"] == len(load_tokenizer("default").encode(human_text))
    assert _append(alice, stream["id"], text="more").status_code == 409


def test_a_stream_is_its_users_own(api_for, alice_key):
    stream = _open(api_for("alice"))
    for name in ("bob", "charlie"):
        assert _append(api_for(name), stream["id"], token_ids=[1, 2]).status_code == 404


@pytest.mark.parametrize(
    "body",
    [
        {"text": "a", "token_ids": [1]},
        {},
        {"token_ids": [-1]},
        {"token_ids": [2**32]},
        {"token_ids": "12"},
        {"text": "nul\x00"},
    ],
)
def test_bad_appends_are_refused_and_store_nothing(alice, alice_key, body):
    stream = _open(alice)
    assert _append(alice, stream["id"], **body).status_code == 400
    assert Stream.objects.get(id=stream["id"]).num_tokens == 0


def test_a_stream_past_its_token_limit_is_refused(alice, alice_key, settings):
    settings.PROVENANCE_STREAM_MAX_TOKENS = 50
    stream = _open(alice)
    assert _append(alice, stream["id"], token_ids=list(range(40))).status_code == 200
    assert _append(alice, stream["id"], token_ids=list(range(20))).status_code == 413
    assert Stream.objects.get(id=stream["id"]).num_tokens == 40


def test_each_append_that_scores_tokens_takes_one_text_of_the_daily_quota(
    alice, alice_key, settings
):
    settings.PROVENANCE_DAILY_QUOTA = 3
    stream = _open(alice)
    assert DetectionLog.objects.count() == 0  # opening answers nothing yet
    assert _append(alice, stream["id"], token_ids=[5, 6, 7]).status_code == 200
    assert _append(alice, stream["id"], token_ids=[]).status_code == 200  # no tokens: free
    assert _append(alice, stream["id"], token_ids=[8]).status_code == 200
    assert alice.post("/api/v1/checks", {"text": "one more"}, format="json").status_code == 202
    refused = _append(alice, stream["id"], token_ids=[9, 10])
    assert refused.status_code == 429 and "daily quota" in refused.json()["detail"]
    assert Stream.objects.get(id=stream["id"]).num_tokens == 4  # the refusal stored nothing
    assert _append(alice, stream["id"], token_ids=[]).status_code == 200  # reading stays free


def test_every_counted_append_is_in_the_detection_log_by_hash(alice, alice_key):
    stream = _open(alice)
    _append(alice, stream["id"], text="Hello there, gen")  # "gen" stays pending
    _append(alice, stream["id"], text="er")  # still one growing word: nothing scored
    _append(alice, stream["id"], text="al", final=True)
    _append(stream_id=_open(alice)["id"], client=alice, token_ids=[1, 2])
    rows = list(DetectionLog.objects.order_by("created_at", "id"))
    assert [(r.kind, r.num_texts, r.username) for r in rows] == [("stream", 1, "alice")] * 3
    assert [r.text_sha256 for r in rows] == [text_sha256("Hello there, gen"), text_sha256("al"), ""]
    assert rows[0].stream_id == rows[1].stream_id != rows[2].stream_id
    assert rows[0].key_names == ["acme-main"] and rows[0].key_ids == [str(alice_key.id)]


def test_the_basic_tier_sees_the_verdict_and_a_rounded_p_only(alice, alice_key, cast):
    cast["acme"].oracle_tier = "basic"
    cast["acme"].save()
    stream = _open(alice)
    ids = [int(i) for i in watermarked_ids(KEY_VALUE, num_tokens=60, seed=5)]
    state = _append(alice, stream["id"], token_ids=ids).json()
    assert "keys" not in state and "log10_e_value" not in state
    assert state["log10_p_anytime"] == int(state["log10_p_anytime"])
