"""The generator's client: the request body vLLM expects and the stream as it is read."""

from __future__ import annotations

import pytest

from provenance.playground.client import (
    ChatRequest,
    ClientConfig,
    GeneratorError,
    _chunks,
    chat_body,
)


def test_the_client_reads_vllm_chunks_with_token_ids_and_the_model():
    lines = [
        'data: {"model": "m1", "choices": [{"delta": {"content": "Hi"}, "token_ids": [5, 6]}]}',
        "",
        'data: {"choices": [{"delta": {}, "finish_reason": "stop", "token_ids": [7]}]}',
        "data: [DONE]",
        'data: {"choices": [{"delta": {"content": "after done"}}]}',
    ]
    chunks = list(_chunks(iter(lines)))
    assert [c.text for c in chunks] == ["Hi", ""]
    assert chunks[0].token_ids == (5, 6) and chunks[1].token_ids == (7,)
    assert chunks[0].provenance == {"model": "m1"} and chunks[1].finish_reason == "stop"


def test_the_client_turns_a_malformed_or_error_event_into_a_clear_error():
    with pytest.raises(GeneratorError, match="malformed"):
        list(_chunks(iter(["data: {not json"])))
    with pytest.raises(GeneratorError, match="model crashed"):
        list(_chunks(iter(['data: {"error": {"message": "model crashed"}}'])))


def _request(watermark: bool) -> ChatRequest:
    return ChatRequest(
        messages=({"role": "user", "content": "hi"},),
        key_name="k1-main" if watermark else None,
        watermark=watermark,
        temperature=0.7,
        top_p=0.9,
        max_tokens=20,
    )


def test_the_body_names_the_key_or_turns_watermarking_off():
    marked = chat_body(_request(True))
    assert marked["vllm_xargs"] == {"watermark_key": "k1-main"}
    assert marked["stream"] and marked["return_token_ids"]
    assert (marked["temperature"], marked["top_p"], marked["max_tokens"]) == (0.7, 0.9, 20)
    assert marked["messages"] == [{"role": "user", "content": "hi"}]
    assert chat_body(_request(False))["vllm_xargs"] == {"watermarking": False}


def test_the_token_never_shows_in_the_configs_repr():
    assert "s3cret" not in repr(ClientConfig(token="s3cret"))


def test_a_generator_error_carries_a_message_to_show_and_its_kind():
    error = GeneratorError("the generator is busy", "busy")
    assert (str(error), error.message, error.kind) == ("the generator is busy",) * 2 + ("busy",)
    with pytest.raises(GeneratorError):
        raise error
