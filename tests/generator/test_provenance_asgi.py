"""The provenance headers middleware (generator/provenance_asgi.py): which key name, model and
tokenizer made each completion, resolved from the request as the processor resolves it."""

from __future__ import annotations

import json

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from generator import provenance_asgi, records
from generator.core import DrawRecord
from generator.provenance_asgi import ProvenanceHeaders, request_provenance


@pytest.mark.parametrize(
    ("body", "default", "expected"),
    [
        ({}, "team-a", ("team-a", True)),
        ({}, None, (None, True)),
        ({"vllm_xargs": {"watermark_key": "team-b"}}, "team-a", ("team-b", True)),
        ({"vllm_xargs": {"watermarking": False}}, "team-a", (None, False)),
        ({"vllm_xargs": {"watermarking": "false"}}, "team-a", (None, False)),
        ({"watermarking": False, "vllm_xargs": {"watermark_key": "team-b"}}, "x", (None, False)),
        # greedy or below a sampling floor: no keyed draw, so no key is named
        ({"temperature": 0}, "team-a", (None, False)),
        ({"temperature": 1e-6}, "team-a", (None, False)),
        ({"top_k": 1}, "team-a", (None, False)),
        ({"temperature": 0.7}, "team-a", ("team-a", True)),
        ({"vllm_xargs": {"watermark_key": 7}}, "team-a", (None, True)),  # not a name
    ],
)
def test_the_request_resolves_to_a_key_name_and_whether_it_is_watermarked(body, default, expected):
    assert request_provenance(body, default) == expected


def _app(seen: list[bytes]) -> ProvenanceHeaders:
    async def chat(request: Request):
        seen.append(await request.body())  # the body reaches the app whole, after the peek
        if b"fail" in seen[-1]:
            return JSONResponse({"error": "bad"}, status_code=400)
        return JSONResponse({"choices": []})

    async def health(request: Request):
        return PlainTextResponse("ok")

    routes = [
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/v1/completions", chat, methods=["POST"]),
        Route("/health", health),
    ]
    return ProvenanceHeaders(Starlette(routes=routes))


def test_completions_are_tagged_and_the_body_reaches_the_app_unchanged(env):
    seen: list[bytes] = []
    with TestClient(_app(seen)) as c:
        body = b'{"vllm_xargs": {"watermark_key": "team-b"}, "messages": []}'
        r = c.post("/v1/chat/completions", content=body)
        assert seen == [body]
        assert r.headers["x-provenance-key"] == "team-b"
        assert r.headers["x-provenance-watermarked"] == "true"
        assert r.headers["x-provenance-model"] == "smollm2-135m"
        assert r.headers["x-provenance-tokenizer"] == "c0ffee"
        r = c.post("/v1/completions", json={"temperature": 0})
        assert r.headers["x-provenance-key"] == "none"
        assert r.headers["x-provenance-watermarked"] == "false"


def test_other_paths_errors_and_malformed_bodies_are_left_alone(env):
    seen: list[bytes] = []
    with TestClient(_app(seen)) as c:
        assert "x-provenance-key" not in c.get("/health").headers
        failed = c.post("/v1/chat/completions", content=b'{"fail": 1}')
        assert failed.status_code == 400 and "x-provenance-key" not in failed.headers
        r = c.post("/v1/chat/completions", content=b"not json")
        assert seen[-1] == b"not json"  # the app answers the malformed request itself
        assert r.headers["x-provenance-key"] == "none"
        assert r.headers["x-provenance-watermarked"] == "false"


def test_without_the_hash_in_the_environment_it_is_computed_from_the_model_dir(monkeypatch):
    from detector.text.tokenizers import load_tokenizer
    from generator.models import resolve_model

    model = resolve_model(None)
    monkeypatch.delenv(provenance_asgi.TOKENIZER_ENV, raising=False)
    monkeypatch.setenv(provenance_asgi.MODEL_DIR_ENV, str(model))
    provenance_asgi._tokenizer_hash.cache_clear()
    try:
        headers = dict(provenance_asgi.provenance_headers("team-a", True))
        expected = load_tokenizer(str(model)).content_hash.encode()
        assert headers[b"x-provenance-tokenizer"] == expected
        monkeypatch.delenv(provenance_asgi.MODEL_DIR_ENV)
        provenance_asgi._tokenizer_hash.cache_clear()
        assert (
            dict(provenance_asgi.provenance_headers(None, False))[b"x-provenance-tokenizer"]
            == b"unknown"
        )
    finally:
        provenance_asgi._tokenizer_hash.cache_clear()


def _engine_app(seen: list[dict], record: DrawRecord | None, directory) -> ProvenanceHeaders:
    """vLLM's server in miniature: the engine writes the draw's record where the request's
    ``vllm_xargs`` says (as ``generator.records.write_rows`` does after each step)."""

    async def chat(request: Request):
        body = json.loads(await request.body())
        seen.append(body)
        token = records.record_token(body.get("vllm_xargs"))
        if token is not None and record is not None:
            records.write(directory, token, record)
        return JSONResponse({"choices": []})

    routes = [Route("/v1/chat/completions", chat, methods=["POST"])]
    return ProvenanceHeaders(Starlette(routes=routes))


def test_on_vllms_server_a_reply_states_what_the_engines_draw_did(env, tmp_path, monkeypatch):
    monkeypatch.setenv(records.RECORD_DIR_ENV, str(tmp_path))
    seen: list[dict] = []
    strong = DrawRecord(keyed=100, with_choice=90, excess=60.0)
    with TestClient(_engine_app(seen, strong, tmp_path)) as c:
        r = c.post("/v1/chat/completions", json={"vllm_xargs": {"provenance_record": "0" * 32}})
    token = seen[0]["vllm_xargs"]["provenance_record"]
    assert token != "0" * 32 and records.record_token(seen[0]["vllm_xargs"]) == token
    assert r.headers["x-provenance-watermarked"] == "true"
    assert float(r.headers["x-provenance-expected-log10-p"]) == round(strong.expected_log10_p(), 1)
    assert not list(tmp_path.iterdir())  # the record was taken
    # The request looked watermarked, but the draw had no choice: the reply says so.
    none = DrawRecord(keyed=40, with_choice=0, excess=0.0)
    with TestClient(_engine_app(seen, none, tmp_path)) as c:
        r = c.post("/v1/chat/completions", json={"messages": []})
    assert r.headers["x-provenance-watermarked"] == "false"
    assert r.headers["x-provenance-key"] == "none"
    assert float(r.headers["x-provenance-expected-log10-p"]) == round(none.expected_log10_p(), 1)
    assert none.expected_log10_p() > -1  # a chance score: nothing a detector could find


def test_no_record_is_asked_for_an_unwatermarked_request(env, tmp_path, monkeypatch):
    monkeypatch.setenv(records.RECORD_DIR_ENV, str(tmp_path))
    seen: list[dict] = []
    body = {"vllm_xargs": {"watermarking": False, "provenance_record": "ab" * 16}}
    with TestClient(
        _engine_app(seen, DrawRecord(keyed=9, with_choice=9, excess=3.0), tmp_path)
    ) as c:
        r = c.post("/v1/chat/completions", json=body)
    assert records.RECORD_ARG not in seen[0]["vllm_xargs"]  # the client's own value dropped
    assert "x-provenance-expected-log10-p" not in r.headers and not list(tmp_path.iterdir())


def _streaming_engine(seen: list[dict], record: DrawRecord | None, directory) -> ProvenanceHeaders:
    """vLLM's server streaming a reply: chunks, each event split over two body messages,
    the engine's record complete before ``[DONE]``."""

    async def stream(scope, receive, send):
        body = json.loads((await receive())["body"])
        seen.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for i in range(3):
            event = json.dumps(
                {
                    "id": "cmpl-1",
                    "object": "text_completion",
                    "model": "m",
                    "choices": [{"text": str(i)}],
                }
            )
            raw = f"data: {event}\n\n".encode()
            for part in (raw[:7], raw[7:]):
                await send({"type": "http.response.body", "body": part, "more_body": True})
        token = records.record_token(body.get("vllm_xargs"))
        if token is not None and record is not None:
            records.write(directory, token, record)
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return ProvenanceHeaders(stream)


@pytest.mark.parametrize("watermarked", [True, False])
def test_a_stream_ends_with_a_provenance_event_from_the_engines_draw(
    env, tmp_path, monkeypatch, watermarked
):
    monkeypatch.setenv(records.RECORD_DIR_ENV, str(tmp_path))
    seen: list[dict] = []
    drawn = DrawRecord(keyed=50, with_choice=45, excess=30.0)
    body = {"stream": True, "prompt": "x", "vllm_xargs": {"watermark_key": "team-b"}}
    if not watermarked:
        body["vllm_xargs"] = {"watermarking": False}
    c = TestClient(_streaming_engine(seen, drawn, tmp_path))  # no lifespan: a bare ASGI app
    with c.stream("POST", "/v1/completions", json=body) as r:
        lines = [ln for ln in r.iter_lines() if ln.startswith("data: ")]
    assert "x-provenance-expected-log10-p" not in r.headers  # sent before the first token
    assert lines[-1] == "data: [DONE]"
    texts = [json.loads(ln[6:])["choices"] for ln in lines[:-2]]
    assert [c[0]["text"] for c in texts] == ["0", "1", "2"]  # the stream passes whole
    last = json.loads(lines[-2][6:])
    assert last["id"] == "cmpl-1" and last["choices"] == []
    prov = last["provenance"]
    assert prov["watermarked"] is watermarked and prov["model"] == "smollm2-135m"
    if watermarked:
        assert prov["key"] == "team-b"
        assert prov["expected_log10_p"] == round(drawn.expected_log10_p(), 1)
    else:
        assert prov["key"] is None and prov["expected_log10_p"] is None
    assert not list(tmp_path.iterdir())  # the record was taken


def test_a_missing_record_leaves_the_settings_answer(env, tmp_path, monkeypatch):
    monkeypatch.setenv(records.RECORD_DIR_ENV, str(tmp_path))
    with TestClient(_engine_app([], None, tmp_path)) as c:
        r = c.post("/v1/chat/completions", json={"messages": []})
    assert r.headers["x-provenance-watermarked"] == "true"
    assert "x-provenance-expected-log10-p" not in r.headers


# --- Content Credentials on vLLM's replies ------------------------------------------------------


HELLO = [{"role": "user", "content": "Hello."}]  # a body the gate accepts


def _signing_app(signer, seen, reply, *, stream=False):
    from generator.config import KeyStore

    store = KeyStore.from_mapping(
        {
            "team-a": {"key": 5, "public_id": "pub-a"},
            "team-c": {"key": 6, "content_credentials": True},
        }
    )

    async def engine(scope, receive, send):
        body = json.loads((await receive())["body"])
        seen.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        if stream:
            for piece in reply:
                event = {
                    "id": "c1",
                    "object": "chat.completion.chunk",
                    "model": "m",
                    "choices": [{"index": 0, "delta": {"content": piece}}],
                }
                raw = f"data: {json.dumps(event)}\n\n".encode()
                await send({"type": "http.response.body", "body": raw, "more_body": True})
            await send(
                {"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False}
            )
            return
        data = {"choices": [{"index": 0, "message": {"role": "assistant", "content": reply}}]}
        raw = json.dumps(data).encode()
        await send({"type": "http.response.body", "body": raw[:10], "more_body": True})
        await send({"type": "http.response.body", "body": raw[10:], "more_body": False})

    return ProvenanceHeaders(engine, credentials=signer[1], store=store)


def test_a_whole_reply_is_signed_when_asked_and_vllm_never_sees_the_field(env, signer):
    from detector.credentials.manifest import key_id_of_soft_binding_value
    from detector.credentials.reading import read_text

    seen: list[dict] = []
    c = TestClient(_signing_app(signer, seen, "Rain on the roof."))
    body = {
        "messages": HELLO,
        "vllm_xargs": {"watermark_key": "team-a"},
        "content_credentials": True,
    }
    r = c.post("/v1/chat/completions", json=body)
    assert "content_credentials" not in seen[0]
    content = r.json()["choices"][0]["message"]["content"]
    assert content.startswith("Rain on the roof.\ufeff")
    assert int(r.headers["content-length"]) == len(r.content)
    credentials = read_text(content, signer[0].ca_pem.decode())
    assert credentials.valid and credentials.trusted
    assert key_id_of_soft_binding_value(credentials.soft_binding["value"]) == "pub-a"
    unsigned = c.post("/v1/chat/completions", json={**body, "content_credentials": False})
    assert unsigned.json()["choices"][0]["message"]["content"] == "Rain on the roof."
    opted_out = {**body, "vllm_xargs": {"watermarking": False}}
    r = c.post("/v1/chat/completions", json=opted_out)  # not watermarked: never signed
    assert r.json()["choices"][0]["message"]["content"] == "Rain on the roof."


def test_a_keys_entry_signs_its_streamed_replies_in_one_more_event(env, signer):
    from detector.credentials.reading import read_text

    seen: list[dict] = []
    c = TestClient(_signing_app(signer, seen, ["Rain ", "on the ", "roof."], stream=True))
    body = {"messages": HELLO, "stream": True, "vllm_xargs": {"watermark_key": "team-c"}}
    with c.stream("POST", "/v1/chat/completions", json=body) as r:
        lines = [ln for ln in r.iter_lines() if ln.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    events = [json.loads(ln[6:]) for ln in lines[:-1]]
    text = "".join(
        choice["delta"]["content"] for event in events for choice in event.get("choices", [])
    )
    assert text.startswith("Rain on the roof.\ufeff")
    assert events[-1]["provenance"]["watermarked"] is True  # the provenance event stays last
    assert read_text(text, signer[0].ca_pem.decode()).valid
