"""A small OpenAI-compatible server for the transformers backend (and ``make run``).

``POST /v1/completions`` and ``/v1/chat/completions`` (``"stream": true`` for SSE),
``GET /v1/models``, ``GET /health``. Keys come only from the key file given by path; a request
picks one by name with ``vllm_xargs: {"watermark_key": NAME}`` (as on vLLM's server) and opts
out with ``vllm_xargs: {"watermarking": false}`` or ``"watermarking": false``. Every response
carries ``provenance: {key, watermarked, model, tokenizer_hash, expected_log10_p}`` and the same
as headers (``generator.provenance_asgi``): ``watermarked`` is what the keyed draw did (false
when it never had a choice), ``expected_log10_p`` the log10 p a detector reaches at the
reply's expected score. A stream's headers leave before the reply exists: they describe its
first token, and its last event's ``provenance`` the whole reply. ``/health`` (open to
probes) gives the number of keys, never their names.
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from generator import fields
from generator.auth import AuthGate, ClientRegistry
from generator.core import SamplingSettings, WatermarkRequestError
from generator.credentials import REQUEST_FIELD, ReplyCredentials
from generator.floors import SamplingFloors
from generator.provenance_asgi import expected_header, provenance_headers
from generator.types import Generation, GenerationRequest

_SAMPLING_FIELDS = (
    "temperature",
    "top_k",
    "top_p",
    "min_p",
    "repetition_penalty",
    "frequency_penalty",
    "presence_penalty",
)


# The fields this server implements; the neutral value of any other field the gate knows
# (``logprobs: false``, ``n: 1``, ...) is accepted as the no-op it is, anything else refused.
_SUPPORTED = frozenset(
    {
        *_SAMPLING_FIELDS,
        "model",
        "messages",
        "prompt",
        "max_tokens",
        "max_completion_tokens",
        "stream",
        "stream_options",
        "seed",
        "user",
        "vllm_xargs",
        "watermarking",
        "ignore_eos",
        "return_token_ids",
        "content_credentials",
    }
)


class BadRequest(ValueError):
    pass


def _unsupported(body: dict[str, Any]) -> str | None:
    for name, value in body.items():
        if name in _SUPPORTED or value is None:
            continue
        field = fields.FIELDS.get(name)
        if field is None or field.neutral is None or not field.neutral(value):
            return name
    return None


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse(
        {"error": {"message": message, "type": "invalid_request_error", "code": status}},
        status_code=status,
    )


def _number(body: dict[str, Any], name: str, kind: type) -> Any:
    value = body[name]
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
        raise BadRequest(f"{name} must be a{'n integer' if kind is int else ' number'}")
    return kind(value)


def parse_request(body: Any, chat: bool) -> tuple[GenerationRequest, bool]:
    """(request, stream) from an OpenAI-style body; BadRequest with a clear message otherwise."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    unsupported = _unsupported(body)
    if unsupported is not None:
        raise BadRequest(f"the field {unsupported!r} is not supported by this server")
    kinds = {"top_k": int}
    sampling = SamplingSettings(
        **{
            f: _number(body, f, kinds.get(f, float))
            for f in _SAMPLING_FIELDS
            if body.get(f) is not None
        }
    )
    xargs = body.get("vllm_xargs") or {}
    if not isinstance(xargs, dict):
        raise BadRequest("vllm_xargs must be an object")
    for name in xargs:
        if name not in fields.XARGS:
            raise BadRequest(f"the field 'vllm_xargs.{name}' is not supported by this server")
    if "watermark_key" in xargs and not (
        isinstance(xargs["watermark_key"], str) and xargs["watermark_key"]
    ):
        raise BadRequest("vllm_xargs.watermark_key must be a key name (a non-empty string)")
    watermark = body.get("watermarking") is not False and xargs.get("watermarking") not in (
        False,
        "false",
    )
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens", 64))
    common: dict[str, Any] = dict(
        max_tokens=max_tokens,
        sampling=sampling,
        key_name=xargs.get("watermark_key"),
        watermark=watermark,
        seed=body.get("seed"),
        ignore_eos=body.get("ignore_eos") is True,  # vLLM's extra parameter, same meaning
    )
    if chat:
        messages = body.get("messages")
        if (
            not isinstance(messages, list)
            or not messages
            or not all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages)
        ):
            raise BadRequest("messages must be a non-empty list of {role, content} objects")
        req = GenerationRequest(
            messages=tuple(
                {"role": str(m.get("role", "user")), "content": m["content"]} for m in messages
            ),
            **common,
        )
    else:
        prompt = body.get("prompt")
        if not isinstance(prompt, str) or not prompt:
            raise BadRequest("prompt must be a non-empty string")
        req = GenerationRequest(prompt=prompt, **common)
    if body.get("n", 1) != 1:
        raise BadRequest("only n = 1 is supported")
    if not isinstance(body.get(REQUEST_FIELD, False), bool):
        raise BadRequest(f"{REQUEST_FIELD} must be true or false")
    return req, bool(body.get("stream", False))


def _usage(g: Generation) -> dict[str, int]:
    return {
        "prompt_tokens": len(g.prompt_token_ids),
        "completion_tokens": len(g.token_ids),
        "total_tokens": len(g.prompt_token_ids) + len(g.token_ids),
    }


def _choice(g: Generation, chat: bool, delta: str | None = None) -> dict[str, Any]:
    finish = g.finish_reason or None
    body: dict[str, Any]
    if delta is not None:
        body = {"delta": {"role": "assistant", "content": delta}} if chat else {"text": delta}
    else:
        body = {"message": {"role": "assistant", "content": g.text}} if chat else {"text": g.text}
    return {
        "index": 0,
        **body,
        "finish_reason": finish,
        "token_ids": list(g.token_ids) if delta is None else None,
    }


def _envelope(rid: str, g: Generation, chat: bool, choice: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": rid,
        "object": "chat.completion" if chat else "text_completion",
        "created": int(time.time()),
        "model": g.model,
        "choices": [choice],
        "provenance": g.provenance(),
    }


def create_app(
    backend: Any,
    auth: ClientRegistry | None = None,
    *,
    enforce: bool = False,
    default_key: str | None = None,
    floors: SamplingFloors | None = None,
    credentials: ReplyCredentials | None = None,
) -> Any:
    """The app over a backend with ``generate``/``stream`` (TransformersBackend); behind
    ``generator.auth.AuthGate`` when a client registry is given (the CLI always gives one
    unless told ``--no-auth``); replies signed as ``credentials`` says
    (``generator.credentials``)."""
    app = _app(backend, credentials or ReplyCredentials())
    if auth is None:
        return app
    return AuthGate(
        app, auth, enforce=enforce, default_key=default_key, floors=floors or SamplingFloors()
    )


def _app(backend: Any, credentials: ReplyCredentials) -> Starlette:
    def _wrapper(g: Generation, requested: object) -> str:
        """The Content Credentials wrapper for a watermarked reply's text, or ""."""
        if not g.watermarked or g.key_name is None or backend.store is None:
            return ""
        options = backend.store.options(g.key_name)
        if not credentials.wanted(options, requested):
            return ""
        return credentials.wrapper(g.text, g.model, options)

    def _headers(g: Generation, whole: bool = True) -> dict[str, str]:
        pairs = provenance_headers(g.key_name, g.watermarked)[:2]
        if whole and g.expected_log10_p is not None:
            pairs.append(expected_header(g.expected_log10_p))
        return {k.decode(): v.decode() for k, v in pairs} | {
            "x-provenance-model": g.model,
            "x-provenance-tokenizer": g.tokenizer_hash,
        }

    def _sse(
        rid: str,
        first: Generation,
        steps: Iterator[Generation],
        chat: bool,
        ids: bool,
        requested: object,
    ) -> Iterator[bytes]:
        sent, count = "", 0
        kind = "chat.completion.chunk" if chat else "text_completion"
        for g in _chain(first, steps):
            delta, sent = g.text[len(sent) :], g.text
            chunk = _envelope(rid, g, chat, _choice(g, chat, delta))
            chunk["object"] = kind
            if ids:  # vLLM's ``return_token_ids``: the ids new in this chunk
                chunk["choices"][0]["token_ids"] = list(g.token_ids[count:])
                count = len(g.token_ids)
            yield f"data: {json.dumps(chunk)}\n\n".encode()
        wrapper = _wrapper(g, requested)
        if wrapper:  # the manifest over the text as sent, in one more event
            chunk = _envelope(rid, g, chat, _choice(g, chat, wrapper))
            chunk["object"] = kind
            yield f"data: {json.dumps(chunk)}\n\n".encode()
        tail = {"id": rid, "usage": _usage(g), "provenance": g.provenance()}
        yield f"data: {json.dumps(tail)}\n\n".encode()
        yield b"data: [DONE]\n\n"

    async def complete(request: Request, chat: bool) -> Any:
        try:
            body = await request.json()
            req, stream = parse_request(body, chat)
        except json.JSONDecodeError:
            return _error(400, "the request body is not valid JSON")
        except (BadRequest, ValueError, TypeError) as exc:
            return _error(400, str(exc))
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        try:
            if stream:
                steps = backend.stream(req)
                first = await run_in_threadpool(next, steps)  # errors surface before the 200
                return _ClosingStream(
                    steps,
                    _sse(
                        rid,
                        first,
                        steps,
                        chat,
                        body.get("return_token_ids") is True,
                        body.get(REQUEST_FIELD),
                    ),
                    media_type="text/event-stream",
                    headers=_headers(first, whole=False),
                )
            g = (await run_in_threadpool(backend.generate, [req]))[0]
        except WatermarkRequestError as exc:
            return _error(400, str(exc))
        wrapper = await run_in_threadpool(_wrapper, g, body.get(REQUEST_FIELD))
        if wrapper:
            g = dataclasses.replace(g, text=g.text + wrapper)
        body = _envelope(rid, g, chat, _choice(g, chat)) | {"usage": _usage(g)}
        return JSONResponse(body, headers=_headers(g))

    async def chat_completions(request: Request) -> Any:
        return await complete(request, True)

    async def completions(request: Request) -> Any:
        return await complete(request, False)

    async def models(request: Request) -> Any:
        return JSONResponse(
            {
                "object": "list",
                "data": [{"id": backend.model_name, "object": "model", "owned_by": "provenance"}],
            }
        )

    async def health(request: Request) -> Any:
        return JSONResponse(
            {
                "status": "ok",
                "backend": backend.name,
                "model": backend.model_name,
                "tokenizer_hash": backend.tokenizer_hash,
                "keys": len(backend.store or []),  # names only to authenticated callers
            }
        )

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/completions", completions, methods=["POST"]),
            Route("/v1/models", models),
            Route("/health", health),
        ]
    )


class _ClosingStream(StreamingResponse):
    """An SSE response that closes the backend's stream as soon as the response ends.

    Starlette cancels a stream whose client hung up (the playground's Stop, a web-side
    timeout) but leaves the sync generator suspended until garbage collection (>100 s
    measured), and the suspended decode loop holds the model lock all that time. Closing it
    here raises GeneratorExit inside the loop, which releases the lock at once.
    """

    def __init__(self, steps: Iterator[Generation], content: Iterator[bytes], **kw: Any) -> None:
        super().__init__(content, **kw)
        self.steps = steps

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            # Shielded: we may be here because of a cancellation. No ``next`` is running by
            # now: anyio waits for a worker thread to finish before it delivers the cancel.
            with anyio.CancelScope(shield=True):
                await run_in_threadpool(getattr(self.steps, "close", lambda: None))


def _chain(first: Generation, rest: Iterator[Generation]) -> Iterator[Generation]:
    yield first
    yield from rest
