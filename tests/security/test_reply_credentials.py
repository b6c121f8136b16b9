# ruff: noqa: F811  (the generator tests' fixtures, imported by name)
"""Content Credentials on vLLM's replies are signed only for text the keyed draw wrote.

A client that may opt out passes the gate with a steering field (``echo``, ``logit_bias``,
``allowed_token_ids``...) and its key still named: the engine draws under the key, so the
reply's record says watermarked, but ``echo`` returns the prompt (any human text) in the
reply's text and the other fields choose the tokens outside the keyed draw. A manifest over
such a reply is the organization's signature that its model created text it did not."""

from __future__ import annotations

import json

import pytest
from starlette.testclient import TestClient

from generator.auth import Client, authorize
from generator.provenance_asgi import ProvenanceHeaders
from tests.generator.conftest import env, signer  # noqa: F401  (fixtures, found by name)

HUMAN = "Every word of this sentence was typed by a person, not drawn by any model."


def _echoing_engine(signer) -> ProvenanceHeaders:
    """vLLM's completions route as it answers ``echo``: the prompt, then what was drawn."""
    from generator.config import KeyStore

    store = KeyStore.from_mapping({"team-a": {"key": 5, "public_id": "pub-a"}})

    async def engine(scope, receive, send):
        body = json.loads((await receive())["body"])
        text = (body["prompt"] if body.get("echo") else "") + " The end."
        raw = json.dumps({"choices": [{"index": 0, "text": text}]}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": raw, "more_body": False})

    return ProvenanceHeaders(engine, credentials=signer[1], store=store)


@pytest.mark.parametrize(
    "steering",
    [
        {"echo": True},
        {"logit_bias": {"100": 100}},
        {"allowed_token_ids": [1, 2, 3]},
        {"bad_words": ["the"]},
    ],
)
def test_a_steered_reply_is_never_signed(env, signer, steering):
    from detector.credentials.reading import read_text

    body = {
        "prompt": HUMAN,
        "max_tokens": 3,
        "vllm_xargs": {"watermark_key": "team-a"},
        "content_credentials": True,
        **steering,
    }
    # the gate lets a client that may opt out send it, its key still named
    client = Client("analyst", "0" * 64, frozenset({"team-a"}), opt_out=True)
    name, _ = authorize(client, dict(body), enforce=False, default_key=None)
    assert name == "team-a"
    r = TestClient(_echoing_engine(signer)).post("/v1/completions", json=body)
    assert r.status_code == 200
    text = r.json()["choices"][0]["text"]
    assert not read_text(text).present, "a steered reply carries the organization's manifest"
    assert "\ufeff" not in text


def test_an_unsteered_reply_is_still_signed(env, signer):
    from detector.credentials.reading import read_text

    body = {"prompt": HUMAN, "vllm_xargs": {"watermark_key": "team-a"}, "content_credentials": True}
    r = TestClient(_echoing_engine(signer)).post("/v1/completions", json=body)
    assert read_text(r.json()["choices"][0]["text"]).valid
