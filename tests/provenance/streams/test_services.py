"""The stream services: a stream per user on one tokenizer's keys, appends of token ids or
text in order, nothing stored on bad input, and the detector's one decision on closing."""

from __future__ import annotations

import numpy as np
import pytest
from django.http import Http404

from provenance.accounts.services import user_create
from provenance.errors import ProblemError
from provenance.keys.models import Tokenizer
from provenance.keys.services import key_create
from provenance.streams.models import Stream
from provenance.streams.services import stream_append, stream_create, stream_get
from tests.provenance.conftest import KEY_VALUE
from tests.provenance.watermark import watermarked_ids

pytestmark = pytest.mark.django_db


def test_a_stream_opens_on_the_teams_keys_with_an_empty_state(cast, alice_key):
    stream, state = stream_create(user=cast["alice"])
    assert stream.key_ids == [str(alice_key.id)] and stream.tokenizer == alice_key.tokenizer
    assert (stream.num_tokens, stream.closed, state.num_tokens) == (0, False, 0)
    assert str(KEY_VALUE).encode() not in bytes(stream.state)


def test_a_user_without_a_team_or_keys_on_two_tokenizers_cannot_open_one(cast, alice_key):
    with pytest.raises(ProblemError, match="no team"):
        stream_create(user=user_create(username="loner", password="p"))
    other = Tokenizer.objects.create(
        name="other",
        source_kind="builtin",
        source_path="mistral-v3",
        content_hash="0" * 64,
        vocab_size=10,
    )
    key_create(name="second", team=cast["acme"], tokenizer=other)
    with pytest.raises(ProblemError, match="share one tokenizer"):
        stream_create(user=cast["alice"])
    assert stream_create(user=cast["alice"], key_ids=[alice_key.id])[0].key_ids == [
        str(alice_key.id)
    ]


def test_a_stream_is_found_only_for_its_user(cast, alice_key):
    stream, _ = stream_create(user=cast["alice"])
    assert stream_get(cast["alice"], stream.id) == stream
    with pytest.raises(Http404):
        stream_get(cast["bob"], stream.id)  # same team, not his


def test_token_ids_accumulate_and_the_closing_append_decides(cast, alice_key):
    stream, _ = stream_create(user=cast["alice"])
    ids = [int(i) for i in watermarked_ids(KEY_VALUE, num_tokens=80, seed=4)]
    for start in range(0, 60, 20):
        stream, state = stream_append(
            user=cast["alice"], stream_id=stream.id, token_ids=ids[start : start + 20]
        )
    assert stream.num_tokens == state.num_tokens == 60 and stream.decision is None
    stream, _ = stream_append(
        user=cast["alice"], stream_id=stream.id, token_ids=ids[60:], final=True
    )
    assert stream.closed and stream.decision["is_watermarked"] and stream.is_watermarked
    assert np.frombuffer(bytes(stream.token_ids), "<u4").tolist() == ids
    with pytest.raises(ProblemError, match="closed"):
        stream_append(user=cast["alice"], stream_id=stream.id, token_ids=[1])


@pytest.mark.parametrize(
    "body,message",
    [
        ({}, "either text or token_ids"),
        ({"text": "a", "token_ids": [1]}, "either text or token_ids"),
        ({"token_ids": [-1]}, "token_ids must be"),
        ({"token_ids": [True]}, "token_ids must be"),
        ({"token_ids": "1 2"}, "token_ids must be"),
    ],
)
def test_bad_appends_are_refused_and_change_nothing(cast, alice_key, body, message):
    stream, _ = stream_create(user=cast["alice"])
    before = bytes(stream.state)
    with pytest.raises(ProblemError, match=message):
        stream_append(user=cast["alice"], stream_id=stream.id, **body)
    stream.refresh_from_db()
    assert bytes(stream.state) == before and stream.num_tokens == 0


def test_a_text_delta_keeps_its_last_word_pending_until_final(cast, alice_key):
    stream, _ = stream_create(user=cast["alice"])
    stream, _ = stream_append(user=cast["alice"], stream_id=stream.id, text="The cat sat on the ma")
    assert stream.pending_text.endswith("ma") and stream.num_tokens > 0
    scored = stream.num_tokens
    stream, _ = stream_append(user=cast["alice"], stream_id=stream.id, text="t.", final=True)
    assert stream.pending_text == "" and stream.num_tokens > scored and stream.closed
    assert Stream.objects.get(pk=stream.pk).decision is not None
