"""The provenance headers middleware (generator/provenance_asgi.py): which key name, model and
tokenizer made each completion, resolved from the request as the processor resolves it."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from generator import provenance_asgi
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


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv(provenance_asgi.MODEL_ENV, "smollm2-135m")
    monkeypatch.setenv(provenance_asgi.TOKENIZER_ENV, "c0ffee")
    monkeypatch.setenv(provenance_asgi.DEFAULT_KEY_ENV, "team-a")
    provenance_asgi._tokenizer_hash.cache_clear()
    yield
    provenance_asgi._tokenizer_hash.cache_clear()


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
