"""The locked-down generator on our own server (generator.server + generator.auth.AuthGate):
tokens, per-client key grants, enforced watermarking, forged xargs, the generation log.
The same gate runs in front of vLLM's server: tests/generator/test_vllm_engine.py."""

from __future__ import annotations

import json
import logging

import pytest

from generator.auth import (
    AccessDenied,
    Client,
    ClientRegistry,
    ClientsFileError,
    authorize,
    issue_token,
    token_digest,
)

KEY_A, KEY_B = 0x0BADC0DE0BADC0DE, 0x1234567890ABCDEF
A = Client("a", token_digest("ta"), frozenset({"team-a"}), opt_out=False)
PROMPT = "Write a haiku about rain."


def _body(**extra):
    return {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": 6, **extra}


# --- the policy, without a server -----------------------------------------------------------


def test_a_client_may_use_only_its_own_keys_and_the_refusal_does_not_reveal_existence():
    name, clean = authorize(
        A, _body(vllm_xargs={"watermark_key": "team-a"}), enforce=False, default_key=None
    )
    assert name == "team-a" and clean["vllm_xargs"] == {"watermark_key": "team-a"}
    with pytest.raises(AccessDenied) as existing:
        authorize(A, _body(vllm_xargs={"watermark_key": "team-b"}), enforce=False, default_key=None)
    with pytest.raises(AccessDenied) as missing:
        authorize(A, _body(vllm_xargs={"watermark_key": "nope"}), enforce=False, default_key=None)
    assert existing.value.status == missing.value.status == 403
    assert existing.value.message == missing.value.message


@pytest.mark.parametrize(
    "body", [_body(watermarking=False), _body(vllm_xargs={"watermarking": "false"})]
)
def test_opting_out_needs_the_permission_and_is_refused_under_enforce(body):
    with pytest.raises(AccessDenied, match="may not opt out"):
        authorize(A, body, enforce=False, default_key=None)
    free = Client("p", token_digest("tp"), frozenset({"*"}), opt_out=True)
    assert authorize(free, body, enforce=False, default_key=None)[1]["vllm_xargs"] == {
        "watermarking": False
    }
    with pytest.raises(AccessDenied, match="enforced"):
        authorize(free, body, enforce=True, default_key=None)


def test_a_request_without_a_key_is_refused_under_enforce_and_the_default_key_is_checked():
    with pytest.raises(AccessDenied, match="enforced"):
        authorize(A, _body(), enforce=True, default_key=None)
    assert authorize(A, _body(), enforce=True, default_key="team-a")[0] == "team-a"
    with pytest.raises(AccessDenied):
        authorize(A, _body(), enforce=False, default_key="team-b")


def test_the_rewritten_body_carries_only_what_was_granted():
    body = _body(watermarking=True, vllm_xargs={"watermark_key": "team-a"})
    _, clean = authorize(A, body, enforce=False, default_key=None)
    assert "watermarking" not in clean
    assert clean["vllm_xargs"] == {"watermark_key": "team-a"}
    with pytest.raises(AccessDenied, match="vllm_xargs.other") as denied:
        authorize(
            A,
            _body(vllm_xargs={"watermark_key": "team-a", "other": 1}),
            enforce=False,
            default_key=None,
        )
    assert denied.value.status == 403


def test_a_clients_file_keeps_digests_only_and_rejects_bad_entries(tmp_path):
    path = tmp_path / "clients.json"
    token = issue_token(path, "app", ["team-a"], opt_out=False)
    assert token not in path.read_text() and token_digest(token) in path.read_text()
    registry = ClientRegistry.from_file(path)
    assert registry.authenticate(f"Bearer {token}").name == "app"
    for header in (None, "", "Bearer", f"Basic {token}", "Bearer wrong"):
        with pytest.raises(AccessDenied) as denied:
            registry.authenticate(header)
        assert denied.value.status == 401
    path.write_text(json.dumps({"clients": {"x": {"token_sha256": "short", "opt_out": True}}}))
    with pytest.raises(ClientsFileError, match="token_sha256"):
        ClientRegistry.from_file(path)


# --- our server, real backend -----------------------------------------------------------------


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from generator.config import KeyStore
    from generator.hf import TransformersBackend

    tmp = tmp_path_factory.mktemp("auth")
    keys = tmp / "keys.json"
    keys.write_text(json.dumps({"team-a": {"key": KEY_A}, "team-b": {"key": KEY_B}}))
    clients = tmp / "clients.json"
    tokens = {
        "a": issue_token(clients, "a", ["team-a"], opt_out=False),
        "b": issue_token(clients, "b", ["team-b"], opt_out=True),
    }
    backend = TransformersBackend(KeyStore.from_file(keys))
    return backend, ClientRegistry.from_file(clients), tokens


def _client(setup, enforce=False):
    from starlette.testclient import TestClient

    from generator.server import create_app

    backend, registry, _ = setup
    return TestClient(create_app(backend, registry, enforce=enforce))


def _auth(setup, name):
    return {"Authorization": f"Bearer {setup[2][name]}"}


@pytest.mark.slow
def test_our_server_refuses_a_request_without_a_token(setup):
    with _client(setup) as c:
        r = c.post("/v1/chat/completions", json=_body(vllm_xargs={"watermark_key": "team-a"}))
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert c.get("/health").status_code == 200  # the liveness probe stays open


@pytest.mark.slow
def test_client_a_cannot_generate_under_bs_key_on_our_server(setup, caplog):
    with _client(setup) as c, caplog.at_level(logging.INFO, logger="generator.access"):
        theirs = c.post(
            "/v1/chat/completions",
            json=_body(vllm_xargs={"watermark_key": "team-b"}),
            headers=_auth(setup, "a"),
        )
        own = c.post(
            "/v1/chat/completions",
            json=_body(vllm_xargs={"watermark_key": "team-a"}),
            headers=_auth(setup, "a"),
        )
    assert theirs.status_code == 403
    assert own.status_code == 200 and own.json()["provenance"]["key"] == "team-a"
    line = [r.getMessage() for r in caplog.records if "status=200" in r.getMessage()][-1]
    assert "client=a key=team-a" in line and "request_id=" in line
    tokens = own.json()["usage"]["completion_tokens"]
    assert f"tokens={tokens}" in line and PROMPT not in caplog.text


@pytest.mark.slow
def test_our_server_refuses_opt_outs_under_enforce(setup):
    with _client(setup, enforce=True) as c:
        r = c.post(
            "/v1/chat/completions", json=_body(watermarking=False), headers=_auth(setup, "b")
        )
        assert r.status_code == 403 and "enforced" in r.json()["error"]["message"]
    with _client(setup) as c:
        r = c.post(
            "/v1/chat/completions", json=_body(watermarking=False), headers=_auth(setup, "b")
        )
        assert r.status_code == 200 and r.json()["provenance"]["watermarked"] is False


@pytest.mark.slow
def test_forged_bodies_are_refused_on_our_server(setup):
    head = json.dumps(_body())[:-1]
    forged = (
        head
        + ', "vllm_xargs": {"watermark_key": "team-a"}, "vllm_xargs": {"watermark_key": "team-b"}}'
    )
    with _client(setup) as c:
        r = c.post(
            "/v1/chat/completions",
            content=forged,
            headers={**_auth(setup, "a"), "Content-Type": "application/json"},
        )
        assert r.status_code == 400
        greedy = _body(vllm_xargs={"watermark_key": "team-a"}, temperature=0)
        r = c.post("/v1/chat/completions", json=greedy, headers=_auth(setup, "a"))
        assert r.status_code == 403 and "greedy" in r.json()["error"]["message"]
        assert c.get("/v1/models", headers=_auth(setup, "a")).status_code == 200
        assert c.post("/tokenize", json={}, headers=_auth(setup, "a")).status_code == 404


def test_as_vllms_middleware_the_gate_is_outermost_and_the_headers_see_its_rewrite(
    tmp_path, monkeypatch
):
    """vLLM's server adds each ``--middleware`` class with ``app.add_middleware`` in order
    (vllm/entrypoints/serve/middleware/register.py); this app is built the same way."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from generator.auth import AuthGate
    from generator.provenance_asgi import ProvenanceHeaders

    seen = []

    async def chat(request):
        seen.append(await request.json())
        return JSONResponse({"choices": [], "usage": {"completion_tokens": 3}})

    clients = tmp_path / "clients.json"
    token = issue_token(clients, "a", ["team-a"], opt_out=False)
    monkeypatch.setenv("PROVENANCE_CLIENTS_FILE", str(clients))
    monkeypatch.setenv("PROVENANCE_ENFORCE_WATERMARK", "1")
    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    for middleware in (ProvenanceHeaders, AuthGate):  # the order serve_vllm passes them
        app.add_middleware(middleware)
    with TestClient(app) as c:
        auth = {"Authorization": f"Bearer {token}"}
        assert c.post("/v1/chat/completions", json=_body()).status_code == 401
        refused = c.post("/v1/chat/completions", json=_body(), headers=auth)
        assert refused.status_code == 403 and seen == []  # enforced: a key must be named
        ok = c.post(
            "/v1/chat/completions",
            json=_body(watermarking=True, vllm_xargs={"watermark_key": "team-a"}),
            headers=auth,
        )
    assert ok.status_code == 200 and ok.headers["x-provenance-key"] == "team-a"
    assert seen[-1]["vllm_xargs"] == {"watermark_key": "team-a"} and "watermarking" not in seen[-1]


@pytest.mark.parametrize(
    ("extra", "what"),
    [
        ({"temperature": 0}, "greedy"),
        ({"temperature": 1e-6}, "greedy"),
        ({"use_beam_search": True}, "beam search"),
    ],
)
def test_greedy_and_beam_search_requests_are_opt_outs_by_other_means(extra, what):
    """The engine serves them unwatermarked, so they need the opt-out permission and are
    refused under enforce, with a key named or not."""
    body = _body(vllm_xargs={"watermark_key": "team-a"}, **extra)
    with pytest.raises(AccessDenied, match=f"may not opt out.*{what}") as denied:
        authorize(A, body, enforce=False, default_key=None)
    assert denied.value.status == 403
    free = Client("p", token_digest("tp"), frozenset({"*"}), opt_out=True)
    assert authorize(free, body, enforce=False, default_key=None)[0] == "team-a"
    with pytest.raises(AccessDenied, match=f"enforced.*{what}"):
        authorize(free, body, enforce=True, default_key=None)


@pytest.mark.parametrize("value", ["0.0", False, True, [0.5], {"t": 1}])
def test_a_number_the_engine_would_parse_from_a_string_or_boolean_is_a_400(value):
    """vLLM's request model parses ``"0.0"`` and ``false`` as temperatures; the gate reads
    JSON numbers only, so no value means one thing to it and another to the engine."""
    free = Client("p", token_digest("tp"), frozenset({"*"}), opt_out=True)
    body = _body(vllm_xargs={"watermark_key": "team-a"}, temperature=value)
    for client in (A, free):
        with pytest.raises(AccessDenied, match="'temperature' must be a number") as denied:
            authorize(client, body, enforce=False, default_key=None)
        assert denied.value.status == 400


def test_sampled_requests_pass_and_the_gate_uses_the_engines_greedy_epsilon():
    from generator import floors
    from generator.core import SAMPLING_EPS

    assert floors.SAMPLING_EPS == SAMPLING_EPS
    for extra in ({"temperature": 0.7}, {"temperature": None}, {"use_beam_search": False}):
        body = _body(vllm_xargs={"watermark_key": "team-a"}, **extra)
        assert authorize(A, body, enforce=True, default_key=None)[0] == "team-a"


class _Exec(Exception):
    """Raised by the stand-in for os.execv: the argv vLLM's server would have started with."""


@pytest.mark.parametrize("enforce", [True, False])
def test_serve_with_vllm_loads_the_gate_outermost_and_passes_enforce(
    tmp_path, monkeypatch, enforce
):
    """``python -m generator serve --backend vllm`` hands the gate its settings through the
    environment (vLLM's ``--middleware`` passes no arguments); the gate built from it enforces."""
    import os

    from generator import auth, cli

    keys, clients = tmp_path / "keys.json", tmp_path / "clients.json"
    keys.write_text(json.dumps({"team-a": {"key": KEY_A}}))
    issue_token(clients, "a", ["team-a"], opt_out=True)
    monkeypatch.setattr(os, "environ", dict(os.environ))  # the command sets several variables

    def fake_execv(path, argv):
        raise _Exec(argv)

    monkeypatch.setattr(os, "execv", fake_execv)
    args = ["serve", "--backend", "vllm", "--keys", str(keys), "--clients", str(clients)]
    with pytest.raises(_Exec) as started:
        cli.main(args + (["--enforce"] if enforce else []))
    argv = started.value.args[0]
    middleware = [argv[i + 1] for i, a in enumerate(argv) if a == "--middleware"]
    assert middleware[-1] == "generator.auth.AuthGate"  # added last: the outermost layer
    assert os.environ[auth.CLIENTS_FILE_ENV] == str(clients.resolve())
    gate = auth.AuthGate(app=None)
    assert gate.enforce is enforce
    body = _body(watermarking=False)
    client = gate.registry.clients[0]
    if enforce:
        with pytest.raises(AccessDenied, match="enforced"):
            authorize(client, body, enforce=gate.enforce, default_key=gate.default_key)
    else:
        assert authorize(client, body, enforce=gate.enforce, default_key=None)[0] is None


def test_a_clients_file_others_can_write_is_refused(tmp_path):
    """Anyone who can write the clients file grants themselves every key and opting out."""
    path = tmp_path / "clients.json"
    issue_token(path, "app", ["team-a"], opt_out=False)
    path.chmod(0o666)
    with pytest.raises(ClientsFileError, match=f"chmod go-w {path}"):
        ClientRegistry.from_file(path)
    with pytest.raises(ClientsFileError, match=f"chmod go-w {path}"):
        issue_token(path, "planted-too", ["*"], opt_out=True)  # never carried into a new file
