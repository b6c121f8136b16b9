"""The small OpenAI-compatible server over the real transformers backend (SmolLM2)."""

from __future__ import annotations

import json
import os

import pytest

from detector.detect import detect_ids

pytestmark = pytest.mark.slow
KEY = 0x0BADC0DE0BADC0DE


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    path = tmp_path_factory.mktemp("keys") / "keys.json"
    path.write_text(json.dumps({"team-a": {"key": KEY}}))
    return path


@pytest.fixture(scope="module")
def client(keys):
    from starlette.testclient import TestClient

    from generator.config import KeyStore
    from generator.hf import TransformersBackend
    from generator.server import create_app

    with TestClient(create_app(TransformersBackend(KeyStore.from_file(keys)))) as c:
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
