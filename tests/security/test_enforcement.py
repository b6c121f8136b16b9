"""Attacks on the enforced watermark: sampling settings that leave the keyed draw no choice.

Each bypass was once served with ``x-provenance-watermarked: true`` by a generator started with
``--enforce`` (and for clients that may not opt out), though its text scored p ~ 0.5. Here the
gate refuses each with a 403 that names the setting; where a client may opt out and watermarking
is not enforced, the reply is served and its headers say what the keyed draw actually did.
Our server over the real transformers backend (SmolLM2), and the middleware stack that runs in
front of vLLM's server (over a stand-in app: no second engine).
"""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from detector.evidence.detection import detect_ids
from generator.auth import AuthGate, ClientRegistry, issue_token
from generator.floors import SamplingFloors
from generator.provenance_asgi import ProvenanceHeaders

KEY_A = 0x0BADC0DE0BADC0DE
PROMPT = "Write a short story about a lighthouse keeper."
BYPASSES = {
    "top_k 1": {"top_k": 1},
    "top_p 1e-9": {"top_p": 1e-9},
    "min_p 1.0": {"min_p": 1.0},
    "temperature 1e-4": {"temperature": 1e-4},
    "beam search": {"use_beam_search": True},
}


def _body(max_tokens: int = 24, **extra):
    return {
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": max_tokens,
        "vllm_xargs": {"watermark_key": "team-a"},
        **extra,
    }


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from generator.config import KeyStore
    from generator.hf import TransformersBackend

    tmp = tmp_path_factory.mktemp("enforcement")
    keys = tmp / "keys.json"
    keys.write_text(json.dumps({"team-a": {"key": KEY_A}, "team-secret": {"key": 99}}))
    clients = tmp / "clients.json"
    tokens = {
        "strict": issue_token(clients, "strict", ["team-a"], opt_out=False),
        "free": issue_token(clients, "free", ["*"], opt_out=True),
    }
    backend = TransformersBackend(KeyStore.from_file(keys))
    return backend, ClientRegistry.from_file(clients), tokens


def _client(setup, enforce: bool):
    from starlette.testclient import TestClient

    from generator.server import create_app

    backend, registry, _ = setup
    return TestClient(create_app(backend, registry, enforce=enforce))


def _auth(setup, name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {setup[2][name]}"}


@pytest.mark.slow
@pytest.mark.parametrize("attack", list(BYPASSES))
def test_an_enforced_server_refuses_settings_that_leave_the_key_no_choice(setup, attack):
    with _client(setup, enforce=True) as c:
        for who in ("strict", "free"):  # under --enforce not even an opt-out client
            r = c.post(
                "/v1/chat/completions", json=_body(**BYPASSES[attack]), headers=_auth(setup, who)
            )
            assert r.status_code == 403, (attack, who, r.status_code)
            message = r.json()["error"]["message"]
            assert "enforced" in message and attack.split()[0] in message  # names the setting


@pytest.mark.slow
@pytest.mark.parametrize("attack", list(BYPASSES))
def test_a_client_without_opt_out_is_refused_the_same_settings(setup, attack):
    with _client(setup, enforce=False) as c:
        r = c.post(
            "/v1/chat/completions", json=_body(**BYPASSES[attack]), headers=_auth(setup, "strict")
        )
        assert r.status_code == 403
        assert "may not opt out" in r.json()["error"]["message"]


@pytest.mark.slow
def test_a_reply_without_choice_says_so_and_gives_its_expected_evidence(setup):
    """An opt-out client may ask for top_k 1: served, and its headers say that nothing was
    watermarked, with an expected log10 p a detector cannot use, matching the detector."""
    with _client(setup, enforce=False) as c:
        r = c.post(
            "/v1/chat/completions",
            json=_body(max_tokens=32, top_k=1, ignore_eos=True),
            headers=_auth(setup, "free"),
        )
    assert r.status_code == 200
    assert r.headers["x-provenance-watermarked"] == "false"
    assert r.headers["x-provenance-key"] == "none"
    assert float(r.headers["x-provenance-expected-log10-p"]) > -1.0
    body = r.json()
    assert body["provenance"]["watermarked"] is False
    ids = body["choices"][0]["token_ids"]
    assert detect_ids(ids, KEY_A).log10_p > -2.0  # the detector finds nothing either


@pytest.mark.slow
def test_a_normal_reply_states_the_evidence_a_detector_reaches(setup):
    with _client(setup, enforce=True) as c:
        r = c.post(
            "/v1/chat/completions",
            json=_body(max_tokens=48, ignore_eos=True, seed=1),
            headers=_auth(setup, "strict"),
        )
    assert r.status_code == 200 and r.headers["x-provenance-watermarked"] == "true"
    expected = float(r.headers["x-provenance-expected-log10-p"])
    assert expected < -5.0
    assert r.json()["provenance"]["expected_log10_p"] == pytest.approx(expected, abs=0.05)
    observed = detect_ids(r.json()["choices"][0]["token_ids"], KEY_A).log10_p
    assert observed < -2.0  # the detector reaches the same order of evidence
    assert abs(observed - expected) < 0.6 * abs(expected)


@pytest.mark.slow
def test_settings_at_the_floors_are_served_watermarked(setup):
    floors = SamplingFloors()
    at_floor = {
        "top_k": floors.min_top_k,
        "temperature": floors.min_temperature,
        "top_p": floors.min_top_p,
        "min_p": floors.max_min_p,
    }
    with _client(setup, enforce=True) as c:
        for name, value in at_floor.items():
            r = c.post(
                "/v1/chat/completions",
                json=_body(max_tokens=8, **{name: value}),
                headers=_auth(setup, "strict"),
            )
            assert r.status_code == 200, (name, r.text)


@pytest.mark.slow
def test_health_gives_no_key_names_to_an_anonymous_caller(setup):
    with _client(setup, enforce=True) as c:
        r = c.get("/health")
    assert r.status_code == 200
    assert "team-secret" not in r.text and "team-a" not in r.text
    assert r.json()["keys"] == 2


@pytest.mark.slow
def test_the_access_log_holds_no_client_chosen_model_or_key_name(setup, caplog):
    with _client(setup, enforce=False) as c, caplog.at_level(logging.INFO, "generator.access"):
        c.post(
            "/v1/chat/completions",
            json=_body(max_tokens=2, model="evil\nforged-line key=team-secret"),
            headers=_auth(setup, "strict"),
        )
        c.post(
            "/v1/chat/completions",
            json=_body(max_tokens=2, vllm_xargs={"watermark_key": "x\nforged status=200"}),
            headers=_auth(setup, "free"),
        )
    lines = [r.getMessage() for r in caplog.records if r.name == "generator.access"]
    assert len(lines) == 2
    assert "model=other" in lines[0] and "evil" not in caplog.text
    assert "key=invalid" in lines[1] and "forged" not in caplog.text


# --- the middleware stack in front of vLLM's server (a stand-in for the engine) --------------


def _asgi_post(app, body: dict, token: str) -> tuple[int, dict[str, str], list[dict]]:
    """POST ``body`` through ``app``; (status, response headers, bodies the inner app saw)."""
    seen: list[dict] = []

    async def run():
        sent: list[dict] = []
        raw = json.dumps(body).encode()
        messages = [{"type": "http.request", "body": raw, "more_body": False}]

        async def receive():
            return messages.pop(0) if messages else {"type": "http.disconnect"}

        async def send(message):
            sent.append(message)

        scope = {
            "type": "http",
            "method": "POST",
            "path": "/v1/chat/completions",
            "headers": [(b"authorization", f"Bearer {token}".encode())],
        }
        await app(scope, receive, send)
        return sent

    async def engine(scope, receive, send):  # answers like vLLM's server, records the request
        seen.append(json.loads((await receive())["body"]))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b'{"choices": []}'})

    app.inner = engine
    sent = asyncio.run(run())
    start = sent[0]
    headers = {k.decode(): v.decode() for k, v in start.get("headers", [])}
    return start["status"], headers, seen


class _Stack:
    """``--middleware ProvenanceHeaders --middleware AuthGate`` as vLLM's server stacks them:
    the gate outermost, both configured from the environment as ``python -m generator serve``
    leaves it."""

    def __init__(self, registry: ClientRegistry, enforce: bool) -> None:
        self.inner = None
        self.app = AuthGate(ProvenanceHeaders(self._call), registry, enforce=enforce)

    async def _call(self, scope, receive, send):
        await self.inner(scope, receive, send)

    async def __call__(self, scope, receive, send):
        await self.app(scope, receive, send)


@pytest.mark.parametrize("attack", list(BYPASSES))
def test_vllms_middleware_refuses_the_same_settings_under_enforce(tmp_path, attack):
    clients = tmp_path / "clients.json"
    token = issue_token(clients, "free", ["*"], opt_out=True)
    stack = _Stack(ClientRegistry.from_file(clients), enforce=True)
    status, _, seen = _asgi_post(stack, _body(**BYPASSES[attack]), token)
    assert status == 403 and seen == []  # the engine never sees the request


def test_vllms_middleware_tags_a_reply_without_choice_as_unwatermarked(tmp_path, monkeypatch):
    for name, value in SamplingFloors().to_env().items():
        monkeypatch.setenv(name, value)
    clients = tmp_path / "clients.json"
    token = issue_token(clients, "free", ["*"], opt_out=True)
    stack = _Stack(ClientRegistry.from_file(clients), enforce=False)
    status, headers, seen = _asgi_post(stack, _body(top_k=1), token)
    assert status == 200 and seen[0]["top_k"] == 1
    assert headers["x-provenance-watermarked"] == "false" and headers["x-provenance-key"] == "none"
    status, headers, _ = _asgi_post(stack, _body(top_k=40), token)
    assert headers["x-provenance-watermarked"] == "true" and headers["x-provenance-key"] == "team-a"
