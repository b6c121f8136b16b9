"""The small OpenAI-compatible server over the real transformers backend (SmolLM2)."""

from __future__ import annotations

import asyncio
import gc
import json
import os

import pytest

from detector.evidence.detection import detect_ids

pytestmark = pytest.mark.slow
KEY = 0x0BADC0DE0BADC0DE


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    path = tmp_path_factory.mktemp("keys") / "keys.json"
    path.write_text(json.dumps({"team-a": {"key": KEY}}))
    return path


@pytest.fixture(scope="module")
def backend(keys):
    from generator.config import KeyStore
    from generator.hf import TransformersBackend

    return TransformersBackend(KeyStore.from_file(keys))


@pytest.fixture(scope="module")
def client(backend):
    from starlette.testclient import TestClient

    from generator.server import create_app

    with TestClient(create_app(backend)) as c:
        yield c


def _chat(**extra):
    return {"messages": [{"role": "user", "content": "Write a haiku about rain."}], **extra}


def test_chat_completions_record_key_model_and_tokenizer(client):
    r = client.post(
        "/v1/chat/completions", json=_chat(max_tokens=40, vllm_xargs={"watermark_key": "team-a"})
    )
    assert r.status_code == 200
    body = r.json()
    prov = body["provenance"]
    assert prov["key"] == "team-a" and prov["watermarked"] is True
    assert prov["model"] == "smollm2-135m-instruct" and len(prov["tokenizer_hash"]) == 64
    assert r.headers["x-provenance-key"] == "team-a"
    assert r.headers["x-provenance-tokenizer"] == prov["tokenizer_hash"]
    assert body["choices"][0]["message"]["content"]
    assert str(KEY) not in r.text


def test_completions_carry_the_watermark(client):
    r = client.post(
        "/v1/completions",
        json={
            "prompt": "The old lighthouse keeper said",
            "max_tokens": 60,
            "vllm_xargs": {"watermark_key": "team-a"},
        },
    )
    ids = r.json()["choices"][0]["token_ids"]
    assert len(ids) >= 20
    assert detect_ids(ids, KEY).p_value < 0.01


def test_streaming_sends_sse_chunks_ending_in_done(client):
    payload = _chat(max_tokens=12, stream=True, vllm_xargs={"watermark_key": "team-a"})
    with client.stream("POST", "/v1/chat/completions", json=payload) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        lines = [ln for ln in r.iter_lines() if ln.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(ln[6:]) for ln in lines[:-1]]
    assert chunks[0]["object"] == "chat.completion.chunk"
    assert chunks[-1]["provenance"]["key"] == "team-a"
    text = "".join(c["choices"][0]["delta"]["content"] for c in chunks if "choices" in c)
    assert text


def test_opting_out_is_recorded(client):
    r = client.post(
        "/v1/completions", json={"prompt": "Hello", "max_tokens": 5, "watermarking": False}
    )
    assert r.json()["provenance"] == {**r.json()["provenance"], "key": None, "watermarked": False}
    assert r.headers["x-provenance-key"] == "none"


@pytest.mark.parametrize(
    "payload, message",
    [
        ({"prompt": "Hi", "vllm_xargs": {"watermark_key": "team-z"}}, "team-z"),
        ({"prompt": "Hi"}, "no watermark key"),
        ({"prompt": ""}, "prompt"),
        ({"prompt": "Hi", "max_tokens": 0}, "max_tokens"),
        ({"prompt": "Hi", "temperature": "hot"}, "temperature"),
    ],
)
def test_bad_requests_get_a_clear_400(client, payload, message):
    r = client.post("/v1/completions", json=payload)
    assert r.status_code == 400 and message in r.json()["error"]["message"]


def test_invalid_json_is_a_400(client):
    r = client.post(
        "/v1/completions", content=b"{nope", headers={"content-type": "application/json"}
    )
    assert r.status_code == 400


def test_a_key_added_to_the_file_works_without_a_restart(client, keys):
    keys.write_text(json.dumps({"team-a": {"key": KEY}, "team-new": {"key": 31337}}))
    os.utime(keys, ns=(2 * 10**18, 2 * 10**18))
    r = client.post(
        "/v1/completions",
        json={
            "prompt": "The sea was",
            "max_tokens": 40,
            "ignore_eos": True,
            "vllm_xargs": {"watermark_key": "team-new"},
        },
    )
    assert r.status_code == 200 and r.json()["provenance"]["key"] == "team-new"
    ids = r.json()["choices"][0]["token_ids"]
    assert len(ids) == 40 and detect_ids(ids, 31337).p_value < 0.01


def test_streamed_chunks_carry_the_new_token_ids_when_asked(client, backend):
    payload = _chat(max_tokens=12, stream=True, return_token_ids=True, ignore_eos=True)
    payload["vllm_xargs"] = {"watermark_key": "team-a"}
    with client.stream("POST", "/v1/chat/completions", json=payload) as r:
        lines = [ln for ln in r.iter_lines() if ln.startswith("data: {")]
    choices = [json.loads(ln[6:])["choices"][0] for ln in lines if '"choices"' in ln]
    ids = [i for c in choices for i in c["token_ids"]]
    assert all(len(c["token_ids"]) == 1 for c in choices) and len(ids) == 12
    text = "".join(c["delta"]["content"] for c in choices)
    assert backend.tokenizer.decode(ids, skip_special_tokens=True) == text


async def _hang_up_after_first_chunk(app, body: bytes) -> list[dict]:
    """Drive the ASGI app as uvicorn does, the client disconnecting after one body chunk."""
    sent: list[dict] = []
    got_chunk = asyncio.Event()
    requested = False

    async def receive() -> dict:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": body, "more_body": False}
        await got_chunk.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and message.get("body"):
            got_chunk.set()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/completions",
        "raw_path": b"",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 2),
    }
    await app(scope, receive, send)
    return sent


def test_a_client_that_hangs_up_releases_the_model_at_once(client, backend):
    body = {"prompt": "Once upon a time", "max_tokens": 200, "ignore_eos": True, "stream": True}
    body["vllm_xargs"] = {"watermark_key": "team-a"}
    gc.disable()  # the stream must be closed by the server, not found later by the collector
    try:
        sent = asyncio.run(_hang_up_after_first_chunk(client.app, json.dumps(body).encode()))
        assert not backend.lock.locked()
    finally:
        gc.enable()
    chunks = [m for m in sent if m["type"] == "http.response.body" and m.get("body")]
    assert 1 <= len(chunks) < 200  # stopped long before the 200 tokens


@pytest.fixture(scope="module")
def signing_client(backend):
    """The same server signing every watermarked reply with a development certificate."""
    from starlette.testclient import TestClient

    from detector.credentials.certificates import development_certificate
    from generator.credentials import ReplyCredentials
    from generator.server import create_app

    made = development_certificate("Acme")
    credentials = ReplyCredentials(made.credential, "Acme", every_reply=True)
    with TestClient(create_app(backend, credentials=credentials)) as c:
        yield c, made


def test_the_openai_client_carries_the_credentials_unchanged_whole_and_streamed(signing_client):
    """What the ``openai`` client hands its caller, whole or assembled from a stream, is the
    text with its C2PA wrapper, which validates; an opted-out reply carries none."""
    import openai

    from detector.credentials.reading import read_text

    http, made = signing_client
    client = openai.OpenAI(base_url="http://testserver/v1", api_key="unused", http_client=http)
    messages = [{"role": "user", "content": "Write a haiku about rain."}]
    keyed = {"vllm_xargs": {"watermark_key": "team-a"}}
    whole = client.chat.completions.create(
        model="m", messages=messages, max_tokens=30, extra_body=keyed
    )
    text = whole.choices[0].message.content
    assert read_text(text, made.ca_pem.decode()).valid
    stream = client.chat.completions.create(
        model="m", messages=messages, max_tokens=30, stream=True, extra_body=keyed
    )
    assembled = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    credentials = read_text(assembled, made.ca_pem.decode())
    assert credentials.valid and credentials.trusted and credentials.model
    opted_out = client.chat.completions.create(
        model="m", messages=messages, max_tokens=10, extra_body={"watermarking": False}
    )
    assert read_text(opted_out.choices[0].message.content).present is False
