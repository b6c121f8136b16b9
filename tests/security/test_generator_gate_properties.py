"""Property tests of the generator's gate over vLLM's own request models.

Hypothesis writes request bodies over every field of vLLM 0.32's ``ChatCompletionRequest`` and
``CompletionRequest`` (read from the installed pydantic classes: each field's values drawn
from its annotation, mixed with the values the gate's rules turn on) and a few names vLLM does
not know. Each body goes through the middleware stack as ``python -m generator serve --backend
vllm`` builds it (``AuthGate`` over ``ProvenanceHeaders``) to a stand-in for vLLM's front end
that does what its serving code does with what passes: validate the body with vLLM's own
model, turn it into ``SamplingParams`` with the model's ``generation_config`` defaults (here as
hostile as they come: every sampling default below the floors), split a list of prompts, and
build our V1 processor's row for it (``generator.vllm_v1.build_row``). The invariants:

- a field the gate does not list (or lists for the other route) is refused, and nothing
  reaches the engine;
- where watermarking is enforced (``--enforce``, or a client that may not opt out), a request
  vLLM would serve asks for exactly one completion, carries exactly one draw record (a token
  the middleware chose), is drawn with a key the client may use, never unwatermarked, with
  sampling above the floors after vLLM applied the model's defaults, and with nothing that
  lets the client see or steer the distribution;
- no two completions ever share one draw record, enforced or not;
- the client cannot choose the watermark's randomness: two rows built from the same request
  (the same ``seed``) route a dual key independently.
"""

from __future__ import annotations

import json
import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator import records
from generator.auth import AuthGate, Client, ClientRegistry, token_digest
from generator.config import KeyStore
from generator.core import DrawRecord, WatermarkRequestError
from generator.fields import FIELDS
from generator.floors import SamplingFloors
from generator.provenance_asgi import ProvenanceHeaders
from tests.security.asgi import post

pytestmark = pytest.mark.vllm
chat_protocol = pytest.importorskip("vllm.entrypoints.openai.chat_completion.protocol")
completion_protocol = pytest.importorskip("vllm.entrypoints.openai.completion.protocol")
preprocess = pytest.importorskip("vllm.renderers.inputs.preprocess")
vllm_v1 = pytest.importorskip("generator.vllm_v1")
VLLMValidationError = pytest.importorskip("vllm.exceptions").VLLMValidationError

CHAT = chat_protocol.ChatCompletionRequest
COMPLETION = completion_protocol.CompletionRequest
KEY_A, KEY_B = 0x0BADC0DE0BADC0DE, 0x1234567890ABCDEF
# team-a routes half of its tokens to each sub-key, so that a routing fixed by the client shows.
KEYS = KeyStore.from_mapping(
    {
        "team-a": {"key": KEY_A, "algorithm": "dual_key_gumbel", "alpha": 0.5},
        "team-b": {"key": KEY_B},
    }
)
CLIENTS = {
    "a-only": Client("a-only", token_digest("token-a"), frozenset({"team-a"}), opt_out=False),
    "free": Client("free", token_digest("token-free"), frozenset({"*"}), opt_out=True),
}
TOKENS = {"a-only": "token-a", "free": "token-free"}
# A model's generation_config as vLLM reads it (``ModelConfig.get_diff_sampling_param``):
# defaults for whatever the request leaves unset, every one below the gate's floors.
MODEL_DEFAULTS = {
    "temperature": 0.05,
    "top_k": 1,
    "top_p": 0.05,
    "min_p": 0.9,
    "repetition_penalty": 0.5,
    "frequency_penalty": -2.0,
    "presence_penalty": -2.0,
}
PROMPT = "Write a short story about a lighthouse keeper."


# --- values: from each field's annotation, and the ones the gate's rules turn on ---------------

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=False)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def from_annotation(annotation: Any) -> st.SearchStrategy[Any]:
    """Values of a pydantic field's type (models and typed dicts: any JSON)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        return st.one_of(*(from_annotation(a) for a in args))
    if origin is Annotated:
        return from_annotation(args[0])
    if origin is Literal:
        return st.sampled_from(args)
    if annotation is type(None):
        return st.none()
    if annotation is bool:
        return st.booleans()
    if annotation is int:
        return st.integers(-3, 40) | st.sampled_from([2**31, 2**63, -(2**63) - 1])
    if annotation is float:
        return st.floats(-3, 6) | st.sampled_from([float("nan"), float("inf"), 1e-9])
    if annotation in (str, bytes):
        return st.text(max_size=8)
    if origin is list:
        return st.lists(from_annotation(args[0]) if args else JSON, max_size=3)
    if origin is dict:
        return st.dictionaries(
            st.text(max_size=6), from_annotation(args[1]) if args else JSON, max_size=3
        )
    return JSON


MESSAGES = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "user", "assistant"]), "content": st.text(max_size=20)}
    ),
    min_size=1,
    max_size=3,
).map(lambda m: [{"role": "user", "content": PROMPT}, *m])
TOKEN_IDS = st.lists(st.integers(0, 49151), min_size=1, max_size=5)
XARG_VALUES = st.sampled_from(
    ["team-a", "team-b", "team-z", "*", "", None, 7, True, False, "false", "true", "ab" * 16]
)
# The values each rule of the gate turns on, beside what the annotation allows.
TARGETED: dict[str, st.SearchStrategy[Any]] = {
    "messages": MESSAGES,
    "prompt": st.text(min_size=1, max_size=20)
    | st.lists(st.text(min_size=1, max_size=10), min_size=1, max_size=70)
    | TOKEN_IDS
    | st.lists(TOKEN_IDS, min_size=1, max_size=4),
    "vllm_xargs": st.dictionaries(
        st.sampled_from(["watermark_key", "watermarking", records.RECORD_ARG, "other"]),
        XARG_VALUES,
        max_size=3,
    ),
    "watermarking": st.sampled_from([True, False, None, "false"]),
    "n": st.integers(0, 4),
    "best_of": st.integers(0, 4),
    "temperature": st.sampled_from([0, 1e-4, 0.3, 0.5, 0.7, 1.0, 2.0, "0.7", True]),
    "top_k": st.sampled_from([-1, 0, 1, 2, 3, 50]),
    "top_p": st.sampled_from([1e-9, 0.3, 0.5, 0.9, 1.0]),
    "min_p": st.sampled_from([0.0, 0.05, 0.1, 0.5, 1.0]),
    "repetition_penalty": st.sampled_from([0.5, 1.0, 1.2]),
    "frequency_penalty": st.sampled_from([-1.0, 0.0, 0.5]),
    "presence_penalty": st.sampled_from([-1.0, 0.0, 0.5]),
    "logprobs": st.sampled_from([True, False, 0, 5]),
    "top_logprobs": st.sampled_from([0, 5]),
    "echo": st.booleans(),
    "logit_bias": st.sampled_from([{}, {"11": 100}]),
    "response_format": st.sampled_from([{"type": "text"}, {"type": "json_object"}]),
    "tool_choice": st.sampled_from(
        ["none", "auto", "required", {"type": "function", "function": {"name": "f"}}]
    ),
    "tools": st.just([{"type": "function", "function": {"name": "f", "parameters": {}}}]),
    "seed": st.integers(-(2**63), 2**63 - 1),
    "continue_final_message": st.booleans(),
    "add_generation_prompt": st.booleans(),
    "use_beam_search": st.booleans(),
}
UNKNOWN_NAMES = ["guided_json", "guided_choice", "logits_processors", "chat_template", "bogus"]


def _field_values(model: Any) -> dict[str, st.SearchStrategy[Any]]:
    values = {}
    for name, info in model.model_fields.items():
        drawn = from_annotation(info.annotation)
        values[name] = TARGETED[name] | drawn if name in TARGETED else drawn
    for name in ("best_of", "watermarking"):  # on the gate's list, whatever vLLM's model holds
        values.setdefault(name, TARGETED[name])
    return values


FIELD_VALUES = {"chat": _field_values(CHAT), "completion": _field_values(COMPLETION)}


NOW_AND_THEN = st.sampled_from([False] * 13 + [True])  # hypothesis leans to the first


@st.composite
def bodies(draw: st.DrawFn, route: str) -> dict[str, Any]:
    values = FIELD_VALUES[route]
    body: dict[str, Any] = {"model": "smollm2-135m-instruct", "max_tokens": 16}
    if route == "chat":
        body["messages"] = draw(st.just([{"role": "user", "content": PROMPT}]) | MESSAGES)
    else:
        body["prompt"] = draw(st.just(PROMPT) | TARGETED["prompt"])
    plain = draw(st.integers(0, 3)) > 0  # mostly a well-formed key, else anything
    body["vllm_xargs"] = {"watermark_key": "team-a"} if plain else draw(TARGETED["vllm_xargs"])
    # Each field a rule of the gate turns on now and then; a few others the gate lists for
    # this route (so that many bodies are served), or any field of vLLM's model.
    listed = sorted(n for n in values if n in FIELDS and FIELDS[n].routes in ("both", route))
    names = [n for n in sorted(TARGETED) if n in listed and draw(NOW_AND_THEN)]
    names += draw(
        st.lists(st.sampled_from(listed), max_size=2, unique=True)
        | st.lists(st.sampled_from(sorted(values)), min_size=1, max_size=2, unique=True)
    )
    for name in dict.fromkeys(names):
        body[name] = draw(values[name])
    if draw(st.integers(0, 9)) == 0:
        body[draw(st.sampled_from(UNKNOWN_NAMES) | st.text(min_size=1, max_size=8))] = draw(JSON)
    return body


# --- the stack, and vLLM's front end in miniature ------------------------------------------------


class FrontEnd:
    """What vLLM's OpenAI server does with a body the middleware passes on: its own request
    model, ``to_sampling_params`` with the model's defaults, one completion per prompt per
    ``n``; records what the processor would draw, and writes each completion's record."""

    def __init__(self, chat: bool) -> None:
        self.chat = chat
        self.seen: list[dict[str, Any]] = []
        self.served: list[tuple[Any, Any, int]] = []  # (request, SamplingParams, prompts)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        body = json.loads((await receive())["body"])
        self.seen.append(body)
        try:
            request = (CHAT if self.chat else COMPLETION).model_validate(body)
            params = request.to_sampling_params(16, dict(MODEL_DEFAULTS))
        except (ValueError, TypeError, VLLMValidationError):  # vLLM's 400: nothing is drawn
            await _answer(send, 400)
            return
        prompts = 1 if self.chat else len(preprocess.prompt_to_seq(request.prompt))
        self.served.append((request, params, prompts))
        directory = records.record_dir()
        token = records.record_token(params.extra_args)
        if directory is not None and token is not None:
            records.write(directory, token, DrawRecord(keyed=1, with_choice=1, excess=0.5))
        await _answer(send, 200)


async def _answer(send: Any, status: int) -> None:
    await send({"type": "http.response.start", "status": status, "headers": []})
    await send({"type": "http.response.body", "body": b'{"choices": []}'})


@pytest.fixture(scope="module", autouse=True)
def record_dir(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(records.RECORD_DIR_ENV, str(tmp_path_factory.mktemp("gate") / "records"))
        yield


def _serve(body: dict[str, Any], who: str, enforce: bool, route: str) -> tuple[int, FrontEnd]:
    front = FrontEnd(route == "chat")
    app = AuthGate(
        ProvenanceHeaders(front, SamplingFloors()),
        ClientRegistry(list(CLIENTS.values())),
        enforce=enforce,
        default_key=None,
        floors=SamplingFloors(),
    )
    path = "/v1/chat/completions" if route == "chat" else "/v1/completions"
    return post(app, body, TOKENS[who], path)[0], front


def _routing(row: Any, steps: int = 64) -> list[int]:
    return [row.draw_key() for _ in range(steps)]


def _check(body: dict[str, Any], who: str, enforce: bool, route: str) -> None:
    status, front = _serve(body, who, enforce, route)
    client = CLIENTS[who]
    listed = all(n in FIELDS and FIELDS[n].routes in ("both", route) for n in body)
    if not listed:
        assert status in (400, 403) and front.seen == [], body  # 400: a malformed field first
        return
    if not front.served:
        return  # refused by the gate or by vLLM's model: nothing is drawn
    assert status == 200
    request, params, prompts = front.served[0]
    completions = prompts * (params.n or 1)
    xargs = dict(params.extra_args or {})
    token = records.record_token(xargs)
    # No two completions ever share one draw record.
    assert completions == 1 or token is None, (completions, body)
    if not (enforce or not client.opt_out):
        return
    # Where watermarking is enforced: one completion, one record the middleware chose.
    assert completions == 1, body
    assert token is not None and set(xargs) == {"watermark_key", records.RECORD_ARG}, (xargs, body)
    assert token != (body.get("vllm_xargs") or {}).get(records.RECORD_ARG)
    name = xargs["watermark_key"]
    assert isinstance(name, str) and client.may_use(name), name
    assert params.watermarking is not False
    try:
        row = vllm_v1.build_row(params, [], [], KEYS)
    except WatermarkRequestError:
        assert name not in KEYS  # vLLM's 400 at admission (validate_params): nothing drawn
        return
    # The processor draws with the store's key for a name the client may use, never unkeyed.
    assert row is not None and row.settings is KEYS[name] and row.record_token == token
    # Sampling as vLLM will apply it (the model's defaults included) is above the floors.
    sampling = {k: getattr(params, k) for k in ("temperature", "top_k", "top_p", "min_p")}
    assert SamplingFloors().refusal(sampling) is None, (sampling, body)
    assert params.repetition_penalty >= 1.0, body
    assert params.frequency_penalty >= 0.0 and params.presence_penalty >= 0.0, body
    # Nothing shows or narrows the distribution outside the keyed draw.
    assert params.logprobs is None and params.prompt_logprobs is None, body
    assert not params.logit_bias and params.allowed_token_ids is None, body
    assert not params.bad_words and params.structured_outputs is None, body
    assert not getattr(params, "logprob_token_ids", None)
    assert not request.echo and not request.use_beam_search
    if route == "chat":
        assert request.tool_choice in (None, "none", "auto"), request.tool_choice
    # The watermark's randomness is not the client's: the same request routes anew.
    if KEYS[name].algorithm == "dual_key_gumbel":
        again = vllm_v1.build_row(params, [], [], KEYS)
        assert again is not None and _routing(row) != _routing(again), body.get("seed")


PROPERTY = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)


@pytest.mark.parametrize("route", ["chat", "completion"])
@pytest.mark.parametrize(("who", "enforce"), [("free", True), ("a-only", False), ("free", False)])
def test_the_gate_holds_its_invariants_over_vllms_request_model(route, who, enforce):
    @PROPERTY
    @given(bodies(route))
    def holds(body: dict[str, Any]) -> None:
        _check(body, who, enforce, route)

    holds()


@pytest.mark.parametrize("route", ["chat", "completion"])
@pytest.mark.parametrize(("who", "enforce"), [("free", True), ("a-only", False)])
def test_no_seed_fixes_the_watermarks_randomness(route, who, enforce):
    """The invariants again, every body with a ``seed`` (the property above meets few)."""

    @PROPERTY
    @given(bodies(route), st.integers(-(2**63), 2**63 - 1))
    def holds(body: dict[str, Any], seed: int) -> None:
        _check(body | {"seed": seed}, who, enforce, route)

    holds()


# --- the cases hypothesis found, kept as examples ------------------------------------------------


@pytest.mark.parametrize("route", ["chat", "completion"])
def test_the_models_generation_config_cannot_lower_the_sampling_the_gate_judged(route):
    """vLLM fills what a request leaves unset from the model's ``generation_config``, after
    the gate: a model whose defaults say ``top_k: 1`` served every plain enforced request
    without a choice for the key. The gate now writes the settings it judged."""
    head = (
        {"messages": [{"role": "user", "content": PROMPT}]}
        if route == "chat"
        else {"prompt": PROMPT}
    )
    body = head | {"max_tokens": 16, "vllm_xargs": {"watermark_key": "team-a"}}
    status, front = _serve(body, "a-only", True, route)
    assert status == 200
    params = front.served[0][1]
    assert (params.temperature, params.top_p, params.min_p) == (1.0, 1.0, 0.0)
    assert params.top_k in (0, -1) and params.repetition_penalty == 1.0
    assert params.frequency_penalty == 0.0 and params.presence_penalty == 0.0


def test_a_fixed_seed_does_not_fix_the_routing_of_a_dual_key():
    """The dual key's routing drew from a generator seeded with the request's ``seed``: a
    client could search seeds offline for one that routes more tokens to key B, whose score
    counts with weight alpha. The routing now draws fresh randomness for every request."""
    from vllm import SamplingParams

    params = SamplingParams(seed=1234, extra_args={"watermark_key": "team-a"})
    rows = [vllm_v1.build_row(params, [], [], KEYS) for _ in range(2)]
    assert all(row is not None for row in rows)
    assert _routing(rows[0]) != _routing(rows[1])


def test_the_strategies_reach_accepted_requests_and_every_field():
    """The properties are not vacuous: the bodies cover every field of vLLM's models, many of
    them are served, and some ask for several prompts (then served only to a client that may
    opt out, unenforced)."""
    assert set(CHAT.model_fields) <= set(FIELD_VALUES["chat"])
    assert set(COMPLETION.model_fields) <= set(FIELD_VALUES["completion"])
    seen = {"served": 0, "several prompts served": 0}

    @PROPERTY
    @given(bodies("completion"))
    def count(body: dict[str, Any]) -> None:
        served = bool(_serve(body, "free", False, "completion")[1].served)
        seen["served"] += served
        several = isinstance(body.get("prompt"), list) and len(body["prompt"]) > 1
        seen["several prompts served"] += served and several

    count()
    assert seen["served"] >= 40 and min(seen.values()) >= 5, seen
