"""The playground against the real generator server on the embedded SmolLM2, started the way
``make run`` starts it (vLLM's server with our processor when vLLM is installed, else ours), on
a key file written from the registry: streamed replies with their provenance, token ids and
meter, stop, and keys that apply without a restart."""

from __future__ import annotations

import base64
import json
import re

import httpx
import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from provenance.keys.services import key_create, key_retire
from provenance.playground.client import ChatRequest, ClientConfig, GeneratorError, stream_chat
from provenance.playground.keyfile import generator_key_name
from provenance.playground.models import Conversation, Message
from provenance.runner.generator import EmbeddedGenerator

pytestmark = pytest.mark.slow


@pytest.fixture
def bob(client, cast):
    cast["bob"].user_permissions.add(Permission.objects.get(codename="use_playground"))
    client.force_login(cast["bob"])
    return client


def post_reply(
    client, conversation, key, watermark: bool, max_tokens: int = 60, temperature: str = "1"
):
    form = {
        "content": "Write a few sentences about the sea.",
        "key": key.pk,
        "temperature": temperature,
        "top_p": "1",
        "max_tokens": str(max_tokens),
    }
    if watermark:
        form["watermark"] = "on"
    return client.post(reverse("playground-reply", args=[conversation.pk]), form)


def read_events(response, limit: int | None = None) -> list[dict]:
    found: list[dict] = []
    for part in response.streaming_content:
        for line in part.decode().splitlines():
            if line.startswith("data: "):
                found.append(json.loads(line[6:]))
        if limit is not None and len(found) >= limit:
            break
    return found


def test_a_watermarked_reply_streams_with_a_growing_meter_and_is_stored(
    bob, cast, alice_key, generator
):
    conversation = Conversation.objects.create(team=cast["acme"], user=cast["bob"])
    events = read_events(post_reply(bob, conversation, alice_key, watermark=True))
    tokens = [e for e in events if e["type"] == "token"]
    assert events[0]["type"] == "start" and events[-1]["type"] == "done"
    assert len(tokens) > 10  # token by token, not one block
    assert tokens[-1]["log10_p"] < tokens[2]["log10_p"]  # evidence grows with the reply
    assert events[-1]["log10_p"] < -2 and events[-1]["watermarked"]
    assert events[-1]["tokenizer_mismatch"] is False
    reply = Message.objects.get(role="assistant")
    assert reply.status == "done" and reply.content == "".join(t["text"] for t in tokens)
    assert reply.key_name == "acme-main" and reply.generator_key == generator_key_name(alice_key)
    assert reply.model == "smollm2-135m-instruct"
    assert reply.tokenizer_hash == alice_key.tokenizer.content_hash
    assert (reply.temperature, reply.top_p, reply.max_tokens) == (1.0, 1.0, 60)
    assert 10 < len(reply.token_ids) <= 60 and reply.log10_p == events[-1]["log10_p"]
    assert reply.token_ids_exact  # the ids the generator sampled, not a re-tokenization


def test_a_key_marked_for_content_credentials_signs_its_replies_and_a_check_reads_them(
    bob, cast, alice_key, generator, c2pa_certificate, api_for
):
    from detector.credentials.reading import read_text, strip_wrapper

    alice_key.content_credentials = True
    alice_key.save(update_fields=["content_credentials"])
    generator.write_keys()
    conversation = Conversation.objects.create(team=cast["acme"], user=cast["bob"])
    events = read_events(post_reply(bob, conversation, alice_key, watermark=True))
    assert events[-1]["type"] == "done", events[-1]
    reply = Message.objects.get(role="assistant")
    assert reply.token_ids_exact  # the wrapper's event is no token
    credentials = read_text(reply.content, c2pa_certificate.ca_pem.decode())
    assert credentials.valid and credentials.trusted, credentials.reasons
    assert credentials.soft_binding["value"]  # the key's public identifier, base64
    assert base64.b64decode(credentials.soft_binding["value"]).decode() == alice_key.public_id
    pasted = (
        api_for("alice")
        .post("/api/v1/checks?wait=30", {"text": reply.content}, format="json")
        .json()
    )
    assert pasted["content_credentials"]["present"] and pasted["content_credentials"]["valid"]
    plain = (
        api_for("alice")
        .post("/api/v1/checks?wait=30", {"text": strip_wrapper(reply.content)}, format="json")
        .json()
    )
    assert pasted["verdict"] == plain["verdict"] and pasted["log10_p"] == plain["log10_p"]


def test_a_reply_without_watermark_shows_no_evidence(bob, cast, alice_key, generator):
    # Greedy (temperature 0) on a fresh conversation: the same reply in every run, and the
    # test key is fixed, so its p-value is fixed too. Sampled text would make this assertion
    # a 1%-level test that fails about once in a hundred runs.
    replies = []
    for _ in range(2):
        conversation = Conversation.objects.create(team=cast["acme"], user=cast["bob"])
        events = read_events(
            post_reply(bob, conversation, alice_key, watermark=False, temperature="0")
        )
        assert events[-1]["type"] == "done" and not events[-1]["watermarked"]
        assert events[-1]["log10_p"] > -2
        replies.append(Message.objects.get(conversation=conversation, role="assistant"))
    assert replies[0].content == replies[1].content  # deterministic, so the verdict is too
    assert len(replies[0].token_ids) > 20 and replies[0].watermarked is False


def _stop_after_a_few_tokens(bob, cast, alice_key) -> Conversation:
    conversation = Conversation.objects.create(team=cast["acme"], user=cast["bob"])
    response = post_reply(bob, conversation, alice_key, watermark=True, max_tokens=200)
    read_events(response, limit=4)
    # What the server does when the browser aborts the fetch: close the response's iterator.
    # (Through the test client's wrapper: response.close() would also close the test's
    # database connection, as request_finished does at the end of a real request.)
    response._iterator.close()
    return conversation


def test_stopping_a_reply_keeps_the_partial_text(bob, cast, alice_key, generator):
    _stop_after_a_few_tokens(bob, cast, alice_key)
    reply = Message.objects.get(role="assistant")
    assert reply.status == "stopped" and reply.content and reply.finish_reason == "stopped"
    assert 0 < len(reply.token_ids) < 200


def test_after_a_stop_the_generator_answers_the_next_reply(
    bob, cast, alice_key, generator, settings
):
    conversation = _stop_after_a_few_tokens(bob, cast, alice_key)
    settings.PROVENANCE_PLAYGROUND = {**settings.PROVENANCE_PLAYGROUND, "READ_TIMEOUT": 10}
    events = read_events(post_reply(bob, conversation, alice_key, watermark=True, max_tokens=5))
    assert events[-1]["type"] == "done"


def _a_few_tokens(generator, key) -> list:
    config = ClientConfig(url=generator.url, read_timeout=60, token=generator.token)
    request = ChatRequest(
        messages=({"role": "user", "content": "Hi"},),
        key_name=generator_key_name(key),
        watermark=True,
        temperature=1.0,
        top_p=1.0,
        max_tokens=3,
    )
    return list(stream_chat(config, request))


def test_keys_added_and_retired_apply_without_a_restart(
    cast, tokenizer_row, generator: EmbeddedGenerator
):
    pid = generator.process.pid
    key, _ = key_create(name="fresh", team=cast["acme"], tokenizer=tokenizer_row)
    with pytest.raises(GeneratorError, match=re.escape(generator_key_name(key))):
        _a_few_tokens(generator, key)  # not in the key file yet: refused, naming the key name
    generator.checked = 0.0
    generator.refresh()
    assert any(chunk.text for chunk in _a_few_tokens(generator, key))
    key_retire(key=key)
    generator.checked = 0.0
    generator.refresh()
    with pytest.raises(GeneratorError, match="refused"):
        _a_few_tokens(generator, key)
    assert generator.process.pid == pid and generator.alive()


def test_the_embedded_generator_answers_only_the_playgrounds_token(generator: EmbeddedGenerator):
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    url = f"{generator.url}/v1/chat/completions"
    assert httpx.post(url, json=body, timeout=30).status_code == 401
    wrong = {"Authorization": "Bearer " + "x" * 43}
    assert httpx.post(url, json=body, headers=wrong, timeout=30).status_code == 401
