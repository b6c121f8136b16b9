"""The request fields the generator's gate accepts: an allowlist, field by field.

vLLM's request models accept any extra field (``extra="allow"``) and expose much more than a
keyed draw can stand: ``logprobs`` hand the client the model's distribution (it samples by
itself, unwatermarked, one token per request), ``logit_bias``, ``allowed_token_ids``,
``bad_words`` and structured output narrow the candidates outside the key, ``echo`` returns the
prompt (possibly human text) under the reply's provenance, ``n > 1`` draws the same keyed
sample again. So the gate (``generator.auth``) reads every top-level field of a completion
request against ``FIELDS`` (vLLM 0.32's ``ChatCompletionRequest`` and ``CompletionRequest``,
each field decided on purpose):

- a field not listed is refused (403 naming it), as is one listed for the other route;
- a listed value of the wrong type or out of range is a 400 naming it (JSON numbers only: a
  numeric string or a boolean is not a number here, whatever an engine would parse);
- a *steering* field (``Field.neutral`` given) at a value other than its neutral one lets the
  client see or steer the distribution outside the keyed draw: ``steering`` lists it, and the
  gate refuses it wherever watermarking is enforced (``--enforce``, or a client that may not
  opt out), with a 403 naming it.

``vllm_xargs`` holds only ``watermark_key`` (a non-empty name) and ``watermarking``.

A request asks for ``completions(body)`` completions: ``n`` per prompt, and a ``prompt`` list of
strings or of token-id lists is one prompt per entry, as vLLM serves it. The engine keeps one
draw record per request, so several completions would share it: the gate counts a list of
prompts as it counts ``n`` (refused wherever watermarking is enforced), and the headers'
middleware asks no record for such a request.

vLLM fills the sampling settings a request leaves unset from the model's ``generation_config``
after the gate has judged them; ``SAMPLING_DEFAULTS`` are the values the gate judges an unset
setting at (vLLM's own neutral ones), and the gate writes them into every watermarked request
it passes on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

MAX_TOKENS = 8192
MAX_INT64 = 2**63 - 1
XARGS = ("watermark_key", "watermarking")
# An unset sampling setting, as the floors judge it: vLLM's neutral defaults (its request
# models' ``_DEFAULT_SAMPLING_PARAMS``, ``generator.core.SamplingSettings``).
SAMPLING_DEFAULTS: dict[str, float | int] = {
    "temperature": 1.0,
    "top_k": 0,
    "top_p": 1.0,
    "min_p": 0.0,
    "repetition_penalty": 1.0,
    "frequency_penalty": 0.0,
    "presence_penalty": 0.0,
}


class FieldRefused(Exception):
    """A field the gate does not accept (403) or a malformed value (400); names the field."""

    def __init__(self, status: int, field: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.field = field
        self.message = message


def _is_int(value: Any, lo: int, hi: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi


def _is_number(value: Any, lo: float, hi: float, *, open_low: bool = False) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    number = float(value)
    return (lo < number if open_low else lo <= number) and number <= hi


def _boolean(value: Any) -> bool:
    return isinstance(value, bool)


def _string(limit: int) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, str) and len(value) <= limit


def _int_list(limit: int) -> Callable[[Any], bool]:
    return lambda value: (
        isinstance(value, list) and len(value) <= limit and all(_is_int(v, 0, 2**31) for v in value)
    )


def _stop(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) <= 256
    return isinstance(value, list) and len(value) <= 4 and all(_string(256)(v) for v in value)


def _stream_options(value: Any) -> bool:
    return isinstance(value, dict) and all(
        k in ("include_usage", "continuous_usage_stats") and (v is None or isinstance(v, bool))
        for k, v in value.items()
    )


_ROLES = ("system", "developer", "user", "assistant", "tool")
_MESSAGE_KEYS = ("role", "content", "name", "tool_call_id", "tool_calls")


def _content(value: Any) -> bool:
    if isinstance(value, str):
        return True
    return isinstance(value, list) and all(
        isinstance(p, dict)
        and set(p) <= {"type", "text"}
        and p.get("type") == "text"
        and isinstance(p.get("text"), str)
        for p in value
    )


def _messages(value: Any) -> bool:
    """Text messages only (a text model: no image, audio or file parts)."""
    return (
        isinstance(value, list)
        and 0 < len(value) <= 1024
        and all(
            isinstance(m, dict)
            and set(m) <= set(_MESSAGE_KEYS)
            and m.get("role") in _ROLES
            and (m.get("content") is None or _content(m.get("content")))
            and (m.get("tool_calls") is None or isinstance(m.get("tool_calls"), list))
            for m in value
        )
    )


def _prompt(value: Any) -> bool:
    if isinstance(value, str):
        return bool(value)
    if not isinstance(value, list) or not value or len(value) > 64:
        return False
    if all(isinstance(v, str) for v in value):
        return True
    if all(_is_int(v, 0, 2**31) for v in value):
        return True
    return all(isinstance(v, list) and v and _int_list(MAX_TOKENS * 4)(v) for v in value)


def _logit_bias(value: Any) -> bool:
    return isinstance(value, dict) and all(_is_number(v, -100, 100) for v in value.values())


def _object(value: Any) -> bool:
    return isinstance(value, dict)


def _tools(value: Any) -> bool:
    return isinstance(value, list) and len(value) <= 128 and all(isinstance(t, dict) for t in value)


def _tool_choice(value: Any) -> bool:
    return value in ("none", "auto", "required") or isinstance(value, dict)


def _xargs(value: Any) -> bool:
    return isinstance(value, dict)


@dataclass(frozen=True)
class Field:
    """``check``: a well-formed value (null always means "not given"); ``expect``: what a
    well-formed value is, for the 400; ``neutral``: for a steering field, the values that
    leave the distribution to the keyed draw (None: the field never steers)."""

    check: Callable[[Any], bool]
    expect: str
    neutral: Callable[[Any], bool] | None = None
    routes: str = "both"  # "chat", "completion" or "both"


def _never(value: Any) -> bool:
    return False


FIELDS: dict[str, Field] = {
    # what to complete and how much
    "model": Field(_string(256), "a model name"),
    "messages": Field(_messages, "a non-empty list of text messages {role, content}", None, "chat"),
    "prompt": Field(
        _prompt, "a non-empty string, list of strings or token ids", None, "completion"
    ),
    "max_tokens": Field(lambda v: _is_int(v, 1, MAX_TOKENS), f"an integer in [1, {MAX_TOKENS}]"),
    "max_completion_tokens": Field(
        lambda v: _is_int(v, 1, MAX_TOKENS), f"an integer in [1, {MAX_TOKENS}]", None, "chat"
    ),
    "min_tokens": Field(lambda v: _is_int(v, 0, MAX_TOKENS), f"an integer in [0, {MAX_TOKENS}]"),
    "stop": Field(_stop, "a string or a list of at most 4 strings"),
    "stop_token_ids": Field(_int_list(64), "a list of at most 64 token ids"),
    "ignore_eos": Field(_boolean, "true or false"),
    "include_stop_str_in_output": Field(_boolean, "true or false"),
    "stream": Field(_boolean, "true or false"),
    "stream_options": Field(_stream_options, "{include_usage, continuous_usage_stats}"),
    "seed": Field(lambda v: _is_int(v, -MAX_INT64 - 1, MAX_INT64), "a 64-bit integer"),
    "user": Field(_string(256), "a string of at most 256 characters"),
    # ours: sign this reply with Content Credentials (generator.credentials); taken out of
    # the body before vLLM reads it
    "content_credentials": Field(_boolean, "true or false"),
    # the sampling the keyed draw applies (the floors of generator.floors judge them)
    "temperature": Field(lambda v: _is_number(v, 0.0, 5.0), "a number in [0, 5]"),
    "top_k": Field(lambda v: _is_int(v, -1, 1 << 20), "an integer >= -1"),
    "top_p": Field(lambda v: _is_number(v, 0.0, 1.0, open_low=True), "a number in (0, 1]"),
    "min_p": Field(lambda v: _is_number(v, 0.0, 1.0), "a number in [0, 1]"),
    "use_beam_search": Field(_boolean, "true or false"),  # the floors refuse true
    "repetition_penalty": Field(
        lambda v: _is_number(v, 0.0, 2.0, open_low=True), "a number in (0, 2]", lambda v: v >= 1
    ),
    "frequency_penalty": Field(
        lambda v: _is_number(v, -2.0, 2.0), "a number in [-2, 2]", lambda v: v >= 0
    ),
    "presence_penalty": Field(
        lambda v: _is_number(v, -2.0, 2.0), "a number in [-2, 2]", lambda v: v >= 0
    ),
    # watermarking
    "watermarking": Field(_boolean, "true or false"),
    "vllm_xargs": Field(_xargs, "an object"),
    # what comes back
    "return_token_ids": Field(_boolean, "true or false"),
    "skip_special_tokens": Field(_boolean, "true or false"),
    "spaces_between_special_tokens": Field(_boolean, "true or false"),
    # chat formatting (the server's own template; the client's is not accepted)
    "add_generation_prompt": Field(_boolean, "true or false", None, "chat"),
    "continue_final_message": Field(_boolean, "true or false", None, "chat"),
    "add_special_tokens": Field(_boolean, "true or false"),
    "tools": Field(_tools, "a list of tool objects", None, "chat"),
    "parallel_tool_calls": Field(_boolean, "true or false", None, "chat"),
    # steering: the client sees or narrows the distribution outside the keyed draw
    "tool_choice": Field(
        _tool_choice,
        '"none", "auto", "required" or a named tool',
        lambda v: v in ("none", "auto"),
        "chat",
    ),
    "n": Field(lambda v: _is_int(v, 1, 16), "an integer in [1, 16]", lambda v: v == 1),
    "best_of": Field(lambda v: _is_int(v, 1, 16), "an integer in [1, 16]", lambda v: v == 1),
    "logprobs": Field(
        lambda v: isinstance(v, bool) or _is_int(v, 0, 20),
        "true, false or an integer in [0, 20]",
        lambda v: v is False,
    ),
    "top_logprobs": Field(lambda v: _is_int(v, 0, 20), "an integer in [0, 20]", lambda v: v == 0),
    "prompt_logprobs": Field(lambda v: _is_int(v, -1, 20), "an integer in [-1, 20]", _never),
    "logprob_token_ids": Field(_int_list(64), "a list of token ids", lambda v: v == []),
    "return_tokens_as_token_ids": Field(_boolean, "true or false", lambda v: v is False),
    "echo": Field(_boolean, "true or false", lambda v: v is False),
    "logit_bias": Field(_logit_bias, "an object of token id: bias in [-100, 100]", lambda v: not v),
    "allowed_token_ids": Field(_int_list(1 << 20), "a list of token ids", _never),
    "bad_words": Field(
        lambda v: isinstance(v, list) and all(isinstance(w, str) for w in v),
        "a list of strings",
        lambda v: v == [],
    ),
    "response_format": Field(_object, "an object", lambda v: v == {"type": "text"}),
    "structured_outputs": Field(_object, "an object", _never),
}


def prompts(value: Any) -> int:
    """How many prompts a ``prompt`` value holds, as vLLM splits it: a string or one list of
    token ids is one prompt; a list of strings or of token-id lists, one per entry."""
    if isinstance(value, list) and value and not all(isinstance(v, int) for v in value):
        return len(value)
    return 1


def completions(body: Mapping[str, Any]) -> int:
    """How many completions ``body`` asks for: ``n`` (or ``best_of``) for each prompt. Any
    JSON is read (a value vLLM would refuse counts as one)."""

    def count(value: Any) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 1 else 1

    return prompts(body.get("prompt")) * max(count(body.get("n")), count(body.get("best_of")))


def check(body: Mapping[str, Any], chat: bool) -> list[str]:
    """The steering fields ``body`` uses (sorted), after checking every field against
    ``FIELDS``; ``FieldRefused`` for a field not accepted or a malformed value."""
    route = "chat" if chat else "completion"
    steering: list[str] = []
    for name, value in body.items():
        field = FIELDS.get(name)
        if field is None or field.routes not in ("both", route):
            raise FieldRefused(
                403, name, f"the field {name!r} is not accepted by this generator ({route})"
            )
        if value is None:
            continue
        if not field.check(value):
            raise FieldRefused(400, name, f"{name!r} must be {field.expect}")
        if field.neutral is not None and not field.neutral(value):
            steering.append(name)
    if body.get("messages") is None and chat:
        raise FieldRefused(400, "messages", "'messages' is required")
    if body.get("prompt") is None and not chat:
        raise FieldRefused(400, "prompt", "'prompt' is required")
    xargs = body.get("vllm_xargs") or {}
    for name in xargs:
        if name not in XARGS:
            raise FieldRefused(
                403,
                f"vllm_xargs.{name}",
                f"the field 'vllm_xargs.{name}' is not accepted by this generator",
            )
    if xargs.get("watermarking", True) not in (True, False, "true", "false"):
        raise FieldRefused(
            400, "vllm_xargs.watermarking", "'vllm_xargs.watermarking' must be true or false"
        )
    return sorted(steering)
