"""Attacks on the generator's gate, tried as a client would: a key chosen by an explicit null,
fields that let the client see or steer the distribution outside the keyed draw, fields the
gate was never told about, settings each at its floor together, a stream whose end says
nothing of its draw, a record directory shared or reached through a symlink.

Each was served on the base commit. The middleware stack runs as ``python -m generator serve
--backend vllm`` stacks it in front of vLLM's server, over a stand-in engine (no second
engine: tests/generator/test_vllm_engine.py confirms the main ones against the real one); our
own server runs over the real transformers backend (SmolLM2).
"""

from __future__ import annotations

import json

import pytest

from generator import records
from generator.auth import AuthGate, ClientRegistry, issue_token
from generator.core import DrawRecord
from generator.floors import SamplingFloors
from generator.provenance_asgi import ProvenanceHeaders
from tests.security.asgi import post

KEY_A = 0x0BADC0DE0BADC0DE
PROMPT = "Write a short story about a lighthouse keeper."

# Each lets the client see the model's distribution or narrow it outside the keyed draw.
STEERING = {
    "logprobs": {"logprobs": True},
    "top_logprobs": {"logprobs": True, "top_logprobs": 5},
    "prompt_logprobs": {"prompt_logprobs": 5},
    "echo": {"echo": True},
    "logit_bias": {"logit_bias": {"11": 100}},
    "allowed_token_ids": {"allowed_token_ids": [11, 12]},
    "bad_words": {"bad_words": ["the"]},
    "structured_outputs": {"structured_outputs": {"choice": ["yes", "no"]}},
    "response_format": {"response_format": {"type": "json_object"}},
    "n": {"n": 2},
    "best_of": {"best_of": 2},
    "tool_choice": {"tool_choice": "required", "tools": [{"type": "function"}]},
    "frequency_penalty": {"frequency_penalty": -2.0},
}
# Not on the list at all: refused for every client, enforced or not.
UNKNOWN = {
    "guided_json": {"guided_json": {"type": "object"}},
    "guided_regex": {"guided_regex": "yes|no"},
    "guided_choice": {"guided_choice": ["yes", "no"]},
    "guided_grammar": {"guided_grammar": "root ::= 'yes'"},
    "chat_template": {"chat_template": "{{ messages }}"},
    "logits_processors": {"logits_processors": ["x"]},
    "vllm_xargs.provenance_record": {
        "vllm_xargs": {"watermark_key": "team-a", "provenance_record": "ab" * 16}
    },
}
AT_FLOORS_TOGETHER = {
    "temperature 0.5 with top_p 0.5": {"temperature": 0.5, "top_p": 0.5},
    "every floor": {"temperature": 0.5, "top_k": 3, "top_p": 0.5, "min_p": 0.1},
}


def _body(path: str = "chat", **extra):
    head: dict[str, object] = (
        {"messages": [{"role": "user", "content": PROMPT}]}
        if path == "chat"
        else {"prompt": PROMPT}
    )
    return {**head, "max_tokens": 24, "vllm_xargs": {"watermark_key": "team-a"}, **extra}


class _Engine:
    """vLLM's server in miniature: records each body it is given, writes the draw's record
    where the request asks (as the engine's processor does), answers JSON or an SSE stream."""

    def __init__(self, record: DrawRecord | None = None) -> None:
        self.seen: list[dict] = []
        self.record = record

    async def __call__(self, scope, receive, send):
        body = json.loads((await receive())["body"])
        self.seen.append(body)
        directory, token = records.record_dir(), records.record_token(body.get("vllm_xargs"))
        if directory is not None and token is not None and self.record is not None:
            records.write(directory, token, self.record)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        if not body.get("stream"):
            await send({"type": "http.response.body", "body": b'{"choices": []}'})
            return
        for text in ("Once", " upon"):
            chunk = {"id": "cmpl-9", "object": "text_completion", "choices": [{"text": text}]}
            await send(
                {
                    "type": "http.response.body",
                    "body": f"data: {json.dumps(chunk)}\n\n".encode(),
                    "more_body": True,
                }
            )
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})


def _stack(registry: ClientRegistry, engine: _Engine, **gate) -> AuthGate:
    """``--middleware ProvenanceHeaders --middleware AuthGate``: the gate outermost."""
    return AuthGate(ProvenanceHeaders(engine), registry, **gate)


@pytest.fixture
def clients(tmp_path):
    path = tmp_path / "clients.json"
    tokens = {
        "a-only": issue_token(path, "a-only", ["team-a"], opt_out=False),
        "free": issue_token(path, "free", ["*"], opt_out=True),
    }
    return ClientRegistry.from_file(path), tokens


# --- choosing a key -------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, "", 7, ["team-b"], {"name": "team-b"}, "team-b", "team-z"])
def test_a_key_is_chosen_only_by_a_name_the_token_may_use(clients, value):
    """A token allowed only team-a on a server whose default is team-b: an explicit null was
    served under team-b. Every non-name and every name it may not use is one 403."""
    registry, tokens = clients
    engine = _Engine()
    app = _stack(registry, engine, enforce=False, default_key="team-b")
    status, headers, content = post(
        app, _body(vllm_xargs={"watermark_key": value}), tokens["a-only"]
    )
    assert status == 403 and engine.seen == [], value
    assert (
        json.loads(content)["error"]["message"]
        == "this token may not use the requested watermark key"
    )
    assert "team-b" not in headers.get("x-provenance-key", "")


def test_the_servers_default_applies_only_when_no_key_is_named_and_the_token_may_use_it(clients):
    registry, tokens = clients
    engine = _Engine()
    own = _stack(registry, engine, enforce=True, default_key="team-a")
    status, headers, _ = post(
        own, {"messages": [{"role": "user", "content": PROMPT}]}, tokens["a-only"]
    )
    assert status == 200 and headers["x-provenance-key"] == "team-a"
    theirs = _stack(registry, engine, enforce=True, default_key="team-b")
    status, _, _ = post(
        theirs, {"messages": [{"role": "user", "content": PROMPT}]}, tokens["a-only"]
    )
    assert status == 403


# --- fields -----------------------------------------------------------------------------------


@pytest.mark.parametrize("field", list(STEERING))
def test_fields_that_see_or_steer_the_distribution_are_refused_where_watermarking_is_enforced(
    clients, field
):
    registry, tokens = clients
    for who, enforce in (("free", True), ("a-only", False)):
        engine = _Engine()
        app = _stack(registry, engine, enforce=enforce)
        status, _, content = post(app, _body(**STEERING[field]), tokens[who])
        message = json.loads(content)["error"]["message"]
        assert status == 403 and engine.seen == [], (field, who)
        assert f"'{field}'" in message and "outside the keyed draw" in message
        assert ("enforced" if enforce else "may not opt out") in message


def test_a_client_that_may_opt_out_may_use_them_unenforced(clients):
    registry, tokens = clients
    engine = _Engine()
    app = _stack(registry, engine, enforce=False)
    status, _, _ = post(app, _body(logprobs=True, top_logprobs=5), tokens["free"])
    assert status == 200 and engine.seen[0]["logprobs"] is True


@pytest.mark.parametrize("field", list(UNKNOWN))
def test_a_field_the_gate_does_not_know_is_refused_for_everyone(clients, field):
    registry, tokens = clients
    engine = _Engine()
    app = _stack(registry, engine, enforce=False)
    status, _, content = post(app, _body(**UNKNOWN[field]), tokens["free"])
    assert status == 403 and engine.seen == []
    assert f"'{field}'" in json.loads(content)["error"]["message"]


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
def test_echo_and_logprobs_are_refused_on_both_routes(clients, path):
    registry, tokens = clients
    engine = _Engine()
    app = _stack(registry, engine, enforce=True)
    kind = "chat" if path.endswith("chat/completions") else "completion"
    for extra in ({"echo": True}, {"logprobs": 5 if kind == "completion" else True}):
        status, _, _ = post(app, _body(kind, **extra), tokens["free"], path)
        assert status == 403, (path, extra)
    assert engine.seen == []


@pytest.mark.parametrize("value", ["0", False, "0.00001"])
def test_a_temperature_the_engine_would_read_from_a_string_or_boolean_is_refused(clients, value):
    registry, tokens = clients
    engine = _Engine()
    app = _stack(registry, engine, enforce=True)
    status, _, content = post(app, _body(temperature=value), tokens["free"])
    assert status == 400 and "temperature" in json.loads(content)["error"]["message"]
    assert engine.seen == []


# --- settings together --------------------------------------------------------------------------


@pytest.mark.parametrize("combo", list(AT_FLOORS_TOGETHER))
def test_settings_each_at_its_floor_are_refused_together_under_enforce(clients, combo):
    registry, tokens = clients
    settings = AT_FLOORS_TOGETHER[combo]
    floors = SamplingFloors()
    assert all(floors.refusal({k: v}) is None for k, v in settings.items())  # each alone passes
    engine = _Engine()
    app = _stack(registry, engine, enforce=True)
    status, _, content = post(app, _body(**settings), tokens["free"])
    message = json.loads(content)["error"]["message"]
    assert status == 403 and engine.seen == [] and "together" in message
    assert all(name in message for name in settings)


# --- what a stream says ---------------------------------------------------------------------


def test_a_streamed_reply_ends_with_what_its_draw_carried(clients, tmp_path, monkeypatch):
    """The headers leave before the first token; the last event before ``[DONE]`` states the
    draw, read from the engine's record. A draw without choice says so."""
    monkeypatch.setenv(records.RECORD_DIR_ENV, str(tmp_path / "records"))
    registry, tokens = clients
    for drawn, marked in (
        (DrawRecord(keyed=60, with_choice=58, excess=40.0), True),
        (DrawRecord(keyed=60, with_choice=0, excess=0.0), False),
    ):
        app = _stack(registry, _Engine(drawn), enforce=True)
        status, _, content = post(
            app, _body("completion", stream=True), tokens["a-only"], "/v1/completions"
        )
        events = [e.removeprefix("data: ") for e in content.decode().split("\n\n") if e]
        assert status == 200 and events[-1] == "[DONE]"
        final = json.loads(events[-2])
        assert final["id"] == "cmpl-9" and final["choices"] == []
        assert final["provenance"]["watermarked"] is marked
        assert final["provenance"]["key"] == ("team-a" if marked else None)
        assert final["provenance"]["expected_log10_p"] == round(drawn.expected_log10_p(), 1)


# --- the record directory ---------------------------------------------------------------------


def test_a_shared_record_directory_stops_the_headers_middleware(tmp_path, monkeypatch):
    """A fixed world-writable path (``/tmp/provenance-records``) let another local user plant
    or read records; the middleware now refuses to start on it."""
    shared = tmp_path / "provenance-records"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv(records.RECORD_DIR_ENV, str(shared))
    with pytest.raises(records.RecordDirError):
        ProvenanceHeaders(_Engine())


def test_a_planted_symlink_is_never_followed(tmp_path):
    directory = tmp_path / "records"
    records.prepare(directory)
    victim = tmp_path / "victim"
    victim.write_text("keep")
    token = records.new_token()
    (directory / f".{token}.{__import__('os').getpid()}.tmp").symlink_to(victim)
    records.write(directory, token, DrawRecord(keyed=1, with_choice=1, excess=0.1))
    assert victim.read_text() == "keep"
    link = tmp_path / "link"
    link.symlink_to(directory)
    with pytest.raises(records.RecordDirError):
        records.prepare(link)


# --- our own server, real backend -------------------------------------------------------------


@pytest.fixture(scope="module")
def our_server(tmp_path_factory):
    from generator.config import KeyStore
    from generator.hf import TransformersBackend

    tmp = tmp_path_factory.mktemp("gate")
    keys = tmp / "keys.json"
    keys.write_text(json.dumps({"team-a": {"key": KEY_A}, "team-b": {"key": 99}}))
    clients = tmp / "clients.json"
    tokens = {
        "a-only": issue_token(clients, "a-only", ["team-a"], opt_out=False),
        "free": issue_token(clients, "free", ["*"], opt_out=True),
    }
    return TransformersBackend(KeyStore.from_file(keys)), ClientRegistry.from_file(clients), tokens


def _our_client(our_server, enforce: bool, default_key: str | None = None):
    from starlette.testclient import TestClient

    from generator.server import create_app

    backend, registry, _ = our_server
    return TestClient(create_app(backend, registry, enforce=enforce, default_key=default_key))


@pytest.mark.slow
def test_our_server_refuses_the_null_key_and_the_steering_fields(our_server):
    tokens = our_server[2]
    with _our_client(our_server, enforce=True, default_key="team-b") as c:
        auth = {"Authorization": f"Bearer {tokens['a-only']}"}
        r = c.post(
            "/v1/chat/completions", json=_body(vllm_xargs={"watermark_key": None}), headers=auth
        )
        assert r.status_code == 403 and "x-provenance-key" not in r.headers
        for field, extra in STEERING.items():
            r = c.post("/v1/chat/completions", json=_body(**extra), headers=auth)
            assert r.status_code == 403 and f"'{field}'" in r.text, field
    with _our_client(our_server, enforce=False) as c:  # opted in to, it is still not served
        auth = {"Authorization": f"Bearer {tokens['free']}"}
        r = c.post("/v1/chat/completions", json=_body(logprobs=True), headers=auth)
        assert r.status_code == 400 and "'logprobs'" in r.text


@pytest.mark.slow
def test_settings_at_their_floors_together_carry_nothing_a_detector_finds(our_server):
    """The measurement behind refusing them: served to a client that may opt out, temperature
    0.5 with top_p 0.5 leaves a reply whose draw states almost no evidence."""
    tokens = our_server[2]
    with _our_client(our_server, enforce=False) as c:
        r = c.post(
            "/v1/chat/completions",
            json=_body(max_tokens=48, ignore_eos=True, seed=3, temperature=0.5, top_p=0.5),
            headers={"Authorization": f"Bearer {tokens['free']}"},
        )
    assert r.status_code == 200
    assert float(r.headers["x-provenance-expected-log10-p"]) > -2.0


@pytest.mark.slow
def test_our_servers_stream_ends_with_the_whole_draws_provenance(our_server):
    tokens = our_server[2]
    with _our_client(our_server, enforce=True) as c:
        payload = _body(max_tokens=16, ignore_eos=True, stream=True, seed=1)
        auth = {"Authorization": f"Bearer {tokens['a-only']}"}
        with c.stream("POST", "/v1/chat/completions", json=payload, headers=auth) as r:
            lines = [ln[6:] for ln in r.iter_lines() if ln.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    final = json.loads(lines[-2])["provenance"]
    assert final["watermarked"] is True and final["key"] == "team-a"
    assert final["expected_log10_p"] is not None and final["expected_log10_p"] < 0


# --- several completions in one request --------------------------------------------------------

MANY_PROMPTS = {
    "64 prompts": [PROMPT] * 64,
    "2 prompts": [PROMPT, "Describe a city under the sea."],
    "2 token-id prompts": [[504, 3458, 314], [504, 3458, 315]],
}


@pytest.mark.parametrize("prompts", list(MANY_PROMPTS))
def test_a_list_of_prompts_counts_as_n_and_is_refused_where_watermarking_is_enforced(
    clients, prompts
):
    """``n: 2`` was refused, ``prompt: [P] * 64`` served: 64 completions under one draw
    record. A list of prompts asks for one completion per prompt, as ``n`` does."""
    registry, tokens = clients
    for who, enforce in (("free", True), ("a-only", False)):
        engine = _Engine()
        app = _stack(registry, engine, enforce=enforce)
        body = _body("completion", prompt=MANY_PROMPTS[prompts])
        status, _, content = post(app, body, tokens[who], "/v1/completions")
        message = json.loads(content)["error"]["message"]
        assert status == 403 and engine.seen == [], (prompts, who)
        assert "'prompt'" in message and "completions" in message
        assert ("enforced" if enforce else "may not opt out") in message


@pytest.mark.parametrize("prompt", [[PROMPT], [504, 3458, 314], [[504, 3458, 314]]])
def test_one_prompt_in_a_list_is_one_completion(clients, prompt):
    registry, tokens = clients
    engine = _Engine()
    app = _stack(registry, engine, enforce=True)
    status, _, _ = post(
        app, _body("completion", prompt=prompt), tokens["a-only"], "/v1/completions"
    )
    assert status == 200 and engine.seen[0]["prompt"] == prompt


@pytest.mark.parametrize("extra", [{"prompt": [PROMPT, PROMPT]}, {"n": 3}])
def test_completions_served_together_never_share_one_draw_record(
    clients, tmp_path, monkeypatch, extra
):
    """Unenforced, a client that may opt out may ask for several completions; the engine's
    processor writes one record per request token, so the completions would overwrite each
    other's record and the headers would state one of them for all. No record is asked for:
    the headers follow the request's settings, as a stream's do."""
    monkeypatch.setenv(records.RECORD_DIR_ENV, str(tmp_path / "records"))
    registry, tokens = clients
    engine = _Engine(DrawRecord(keyed=60, with_choice=58, excess=40.0))
    app = _stack(registry, engine, enforce=False)
    status, headers, _ = post(app, _body("completion", **extra), tokens["free"], "/v1/completions")
    assert status == 200
    assert records.RECORD_ARG not in engine.seen[0]["vllm_xargs"]
    assert "x-provenance-expected-log10-p" not in headers
    assert headers["x-provenance-watermarked"] == "true"


# --- names, matched whole; what the log prints ---------------------------------------------------


@pytest.mark.parametrize("name", ["team-a\n", "team-a\r\n", "team-a\u2028", "team a", "team-a\x00"])
def test_a_key_file_refuses_a_name_with_a_trailing_newline_or_any_other_character(name):
    """``^...$`` admits one trailing newline: such a name loaded, and a ``*`` client could
    then name it."""
    from generator.config import KeyFileError, KeyStore

    with pytest.raises(KeyFileError, match="invalid key name"):
        KeyStore.from_mapping({name: {"key": KEY_A}})


@pytest.mark.parametrize(
    "key", ["team-a\n", "team-a\n generation client=admin key=team-b", "é\x1b[2J"]
)
def test_a_client_supplied_name_never_writes_a_raw_newline_into_the_access_log(
    tmp_path, caplog, key
):
    """A ``*`` client named the key ``"team-a\\n"``: the pattern admitted it, and the access
    log line broke in two. Every value the line prints is escaped, the client's name too."""
    path = tmp_path / "clients.json"
    token = issue_token(path, "evil\nclient=admin", ["*"], opt_out=True)
    registry = ClientRegistry.from_file(path)
    app = _stack(registry, _Engine(), enforce=False)
    body = _body(model="m\nodel", vllm_xargs={"watermark_key": key})
    with caplog.at_level("INFO", logger="generator.access"):
        status, _, _ = post(app, body, token)
    lines = [r.getMessage() for r in caplog.records if r.name == "generator.access"]
    assert status == 200 and len(lines) == 1
    line = lines[0]
    assert line.isprintable() and line.isascii(), line
    assert " key=invalid " in line and "client=evil\\nclient=admin " in line


def test_a_token_that_may_not_opt_out_must_name_a_key_where_the_server_has_no_default(clients):
    """Found by the gate's property tests: unenforced, with no server default, a keyless
    request from such a token was passed on (the engine's processor then refused it, and a
    server without the processor would have served it unwatermarked)."""
    registry, tokens = clients
    engine = _Engine()
    app = _stack(registry, engine, enforce=False, default_key=None)
    for xargs in ({}, None):
        status, _, content = post(app, _body(vllm_xargs=xargs), tokens["a-only"])
        assert status == 403 and engine.seen == []
        assert "name a key" in json.loads(content)["error"]["message"]
    status, _, _ = post(app, _body(vllm_xargs={}), tokens["free"])  # it may opt out
    assert status == 200
