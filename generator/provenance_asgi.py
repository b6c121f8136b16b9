"""ASGI middleware: every completion response says which key name, model and tokenizer made it.

Used by our own server and, through ``--middleware``, by vLLM's OpenAI server (whose JSON we do
not rewrite): headers ``x-provenance-key`` (name, or ``none``), ``x-provenance-watermarked``,
``x-provenance-model``, ``x-provenance-tokenizer`` (sha256 of the tokenizer's canonical JSON).
Our own server adds ``x-provenance-expected-log10-p`` from what its sampler did
(``generator.core.DrawRecord``). On vLLM's server that record lives in the engine's process:
with ``$PROVENANCE_RECORD_DIR`` set (``python -m generator serve`` sets it) the middleware asks
the engine for it (``generator.records``), so a non-streaming reply gets the same header and an
``x-provenance-watermarked`` taken from what the sampler did. A streamed reply's headers go out
before its first token: there ``x-provenance-watermarked`` follows the request's settings,
false for an opt-out and for settings under the floors of ``generator.floors`` (which the gate
refuses wherever watermarking is enforced); its record is read when ``data: [DONE]`` passes,
and a last event with no choices and a ``provenance`` object (key, watermarked, model,
tokenizer hash, expected log10 p) goes out just before it. A request for several completions
(``n`` above 1, a list of prompts: ``generator.fields.completions``) gets no record, since the
engine keeps one per request and its completions would share it: its headers follow the
request's settings, as a stream's do.
Model and tokenizer come from ``$PROVENANCE_MODEL_NAME`` / ``$PROVENANCE_TOKENIZER_HASH``, set by
``python -m generator serve`` (else the hash is computed once from ``$PROVENANCE_MODEL_DIR``).
With Content Credentials on (``generator.credentials``: the server flag, the key's entry or
the request's ``content_credentials``, which is taken out of the body before vLLM reads it),
a watermarked reply's text gets its C2PA text wrapper: a whole reply's JSON is rewritten with
the wrapper at the end of each choice's text, and a stream gets one more event per choice,
with the wrapper as its text, before the ``provenance`` event.
Key values never appear: only names.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from pathlib import Path
from typing import Any

from generator import config, fields, records
from generator.config import DEFAULT_KEY_ENV, MODEL_DIR_ENV, MODEL_ENV, TOKENIZER_ENV, KeyStore
from generator.core import WatermarkRequestError
from generator.credentials import REQUEST_FIELD, ReplyCredentials
from generator.floors import SamplingFloors

__all__ = ["DEFAULT_KEY_ENV", "MODEL_DIR_ENV", "MODEL_ENV", "TOKENIZER_ENV"]  # re-exported
EXPECTED_HEADER = b"x-provenance-expected-log10-p"
_PATHS = ("/v1/completions", "/v1/chat/completions")


def request_provenance(
    body: dict[str, Any], default_key: str | None, floors: SamplingFloors | None = None
) -> tuple[str | None, bool]:
    """(key name, watermarked) for an OpenAI-style request body, as our processor resolves it;
    settings under ``floors`` leave the keyed draw no choice, so they count as unwatermarked."""
    args = dict(body.get("vllm_xargs") or {})
    if body.get("watermarking") is False:
        args["watermarking"] = False
    if args.get("watermarking") in (False, "false"):
        return None, False
    name = args.get("watermark_key", default_key)
    marked = (floors or SamplingFloors()).refusal(body) is None
    return (name if isinstance(name, str) and marked else None), marked


def expected_header(log10_p: float) -> tuple[bytes, bytes]:
    """``x-provenance-expected-log10-p``: the log10 p a detector reaches at the reply's
    expected score (one decimal; 0 for a reply that carries nothing)."""
    return EXPECTED_HEADER, f"{round(min(log10_p, 0.0), 1) + 0.0:.1f}".encode()  # no "-0.0"


@functools.cache
def _tokenizer_hash() -> str:
    """``$PROVENANCE_TOKENIZER_HASH``, else hashed once from ``$PROVENANCE_MODEL_DIR``."""
    if (given := config.tokenizer_hash()) is not None:
        return given
    if (directory := config.model_dir()) is not None:
        from detector.text.tokenizers import load_tokenizer

        return load_tokenizer(directory).content_hash
    return "unknown"


def provenance_headers(name: str | None, watermarked: bool) -> list[tuple[bytes, bytes]]:
    return [
        (b"x-provenance-key", (name if watermarked and name else "none").encode()),
        (b"x-provenance-watermarked", b"true" if watermarked else b"false"),
        (b"x-provenance-model", config.served_model().encode()),
        (b"x-provenance-tokenizer", _tokenizer_hash().encode()),
    ]


class ProvenanceHeaders:
    """Pure ASGI: buffer the request body, replay it, tag the response start (and end a
    stream with its ``provenance`` event)."""

    def __init__(
        self,
        app: Any,
        floors: SamplingFloors | None = None,
        credentials: ReplyCredentials | None = None,
        store: KeyStore | None = None,
    ) -> None:
        self.app = app
        self.floors = floors if floors is not None else SamplingFloors.from_env()
        self.credentials = credentials if credentials is not None else ReplyCredentials.from_env()
        self.store = store if store is not None else KeyStore.from_env()
        directory = records.record_dir()
        if directory is not None:
            records.prepare(directory)  # a directory not private to us stops the server here

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if (
            scope["type"] != "http"
            or scope.get("path") not in _PATHS
            or scope.get("method") != "POST"
        ):
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            parsed = json.loads(body or b"{}")
            name, marked = request_provenance(
                parsed if isinstance(parsed, dict) else {},
                config.default_key(),
                self.floors,
            )
        except (ValueError, TypeError, WatermarkRequestError):
            name, marked, parsed = None, False, None  # the app answers it itself
        requested = None
        if isinstance(parsed, dict) and REQUEST_FIELD in parsed:
            requested = parsed.pop(REQUEST_FIELD)  # ours: vLLM never sees it
            body = json.dumps(parsed).encode()
            scope = dict(scope, headers=_with_length(scope.get("headers", []), len(body)))
        token, directory = None, records.record_dir()
        if directory is not None and isinstance(parsed, dict):
            body, token = _ask_for_record(parsed, marked)
            scope = dict(scope, headers=_with_length(scope.get("headers", []), len(body)))
        streamed = isinstance(parsed, dict) and parsed.get("stream") is True
        tail = _StreamTail() if streamed else None
        signing = self._signing(name, marked and not _steered(parsed), requested)
        held: list[dict[str, Any]] = []  # a whole reply to sign: its start and body, kept
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def drawn() -> tuple[bool, list[tuple[bytes, bytes]], float | None]:
            """(watermarked, extra headers, expected log10 p) from the engine's record."""
            if token is not None and directory is not None:
                record = await _taken(directory, token)
                if record is not None:  # what the sampler did, not what was asked
                    expected = record.expected_log10_p()
                    return record.watermarked, [expected_header(expected)], expected
            return marked, [], None

        async def tagged(message: dict[str, Any]) -> None:
            nonlocal tail, signing
            if message["type"] == "http.response.start":
                if message.get("status", 500) >= 400:
                    tail, signing = None, None  # an error: nothing was drawn
                else:
                    said, extra = marked, list[tuple[bytes, bytes]]()
                    if tail is None:  # a whole reply: its record is complete now
                        said, extra, _ = await drawn()
                        signing = signing if said else None
                    message = dict(
                        message,
                        headers=list(message.get("headers", []))
                        + provenance_headers(name, said)
                        + extra,
                    )
                    if signing is not None and tail is None:
                        held.append(message)  # sent with the signed body
                        return
            elif message["type"] == "http.response.body" and tail is not None:
                events, done = tail.feed(message.get("body", b""), message.get("more_body", False))
                if done is not None:  # the stream's end: state what its draw carried
                    said, _, expected = await drawn()
                    if said and signing is not None:
                        events += await asyncio.to_thread(tail.credential_events, signing)
                    events += tail.provenance_event(name, said, expected) + done
                message = dict(message, body=events)
            elif message["type"] == "http.response.body" and held:
                held.append(message)
                if message.get("more_body", False):
                    return
                start, *parts = held
                assert signing is not None
                signed = await asyncio.to_thread(
                    _signed_body, b"".join(p.get("body", b"") for p in parts), signing
                )
                headers = _with_length(start.get("headers", []), len(signed))
                await send(dict(start, headers=headers))
                message = {"type": "http.response.body", "body": signed, "more_body": False}
            await send(message)

        await self.app(scope, replay, tagged)

    def _signing(self, name: str | None, marked: bool, requested: object) -> _Signing | None:
        """How a reply under key ``name`` is signed, or None when it is not."""
        if not marked or name is None or self.credentials.credential is None:
            return None
        if self.store is not None:
            self.store = self.store.refreshed()
            options = self.store.options(name)
        else:
            options = config.KeyOptions(public_id=name)
        if not self.credentials.wanted(options, requested):
            return None
        return _Signing(self.credentials, options)


def _steered(parsed: Any) -> bool:
    """Whether a request's reply holds text the keyed draw did not choose: a steering field
    of the gate's (``echo`` returns the prompt; ``logit_bias`` and the like pick tokens
    outside the draw), or a body the gate would refuse. Such a reply is never signed: its
    manifest would say the model created text it did not."""
    if not isinstance(parsed, dict):
        return True
    try:
        return bool(fields.check(parsed, "messages" in parsed))
    except fields.FieldRefused:
        return True


class _Signing:
    """Signs one reply's texts (each choice's) for one key's options."""

    def __init__(self, credentials: ReplyCredentials, options: config.KeyOptions) -> None:
        self.credentials = credentials
        self.options = options

    def wrapper(self, text: str) -> str:
        return self.credentials.wrapper(text, config.served_model(), self.options)


def _signed_body(body: bytes, signing: _Signing) -> bytes:
    """A whole reply's JSON with each choice's text followed by its wrapper (as it came, if
    it is not a completion's JSON)."""
    try:
        data = json.loads(body)
    except ValueError:
        return body
    for choice in data.get("choices") or [] if isinstance(data, dict) else []:
        message = choice.get("message") if isinstance(choice, dict) else None
        if isinstance(message, dict) and isinstance(message.get("content"), str):
            message["content"] += signing.wrapper(message["content"])
        elif isinstance(choice, dict) and isinstance(choice.get("text"), str):
            choice["text"] += signing.wrapper(choice["text"])
    return json.dumps(data).encode()


class _StreamTail:
    """Passes a server-sent-event stream through and finds its end (``data: [DONE]``, or
    the last body message), where the ``provenance`` event goes."""

    def __init__(self) -> None:
        self.buffer = b""
        self.last: dict[str, Any] = {}
        self.finished = False
        self.texts: dict[int, str] = {}  # each choice's text so far (index -> text)
        self.chat = False

    def feed(self, data: bytes, more: bool) -> tuple[bytes, bytes | None]:
        """(events to send now, the closing bytes once the end is reached, else None)."""
        if self.finished:
            return data, None
        self.buffer += data
        *events, self.buffer = self.buffer.split(b"\n\n")
        out = b""
        for event in events:
            payload = event.strip().removeprefix(b"data:").strip()
            if payload == b"[DONE]":
                self.finished = True
                rest, self.buffer = self.buffer, b""
                return out, event + b"\n\n" + rest
            self._remember(payload)
            out += event + b"\n\n"
        if not more:
            self.finished = True
            rest, self.buffer = self.buffer, b""
            return out, rest
        return out, None

    def _remember(self, payload: bytes) -> None:
        if payload.startswith(b"{"):
            try:
                data = json.loads(payload)
            except ValueError:
                return
            if isinstance(data, dict):
                self.last = {k: data[k] for k in ("id", "object", "created", "model") if k in data}
                self._accumulate(data.get("choices"))

    def _accumulate(self, choices: Any) -> None:
        for choice in choices if isinstance(choices, list) else []:
            if not isinstance(choice, dict) or not isinstance(choice.get("index", 0), int):
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                self.chat = True
                piece = delta.get("content")
            else:
                piece = choice.get("text")
            if isinstance(piece, str):
                index = choice.get("index", 0)
                self.texts[index] = self.texts.get(index, "") + piece

    def credential_events(self, signing: _Signing) -> bytes:
        """One event per choice whose text is its Content Credentials wrapper."""
        out = b""
        for index, text in sorted(self.texts.items()):
            wrapper = signing.wrapper(text)
            if not wrapper:
                continue
            body: dict[str, Any] = (
                {"delta": {"content": wrapper}} if self.chat else {"text": wrapper}
            )
            choice = {"index": index, **body, "finish_reason": None}
            out += b"data: " + json.dumps({**self.last, "choices": [choice]}).encode() + b"\n\n"
        return out

    def provenance_event(
        self, name: str | None, watermarked: bool, expected: float | None
    ) -> bytes:
        provenance = {
            "key": name if watermarked and name else None,
            "watermarked": watermarked,
            "model": config.served_model(),
            "tokenizer_hash": _tokenizer_hash(),
            "expected_log10_p": None if expected is None else round(min(expected, 0.0), 1) + 0.0,
        }
        event = {**self.last, "choices": [], "provenance": provenance}
        return b"data: " + json.dumps(event).encode() + b"\n\n"


def _ask_for_record(parsed: dict[str, Any], marked: bool) -> tuple[bytes, str | None]:
    """The request body to pass on, and the record token put in it: a fresh one for a
    watermarked request of one completion, none otherwise (a client's own value dropped)."""
    xargs = parsed.get("vllm_xargs")
    xargs = dict(xargs) if isinstance(xargs, dict) else xargs
    token = None
    if isinstance(xargs, dict):
        xargs.pop(records.RECORD_ARG, None)
    if marked and fields.completions(parsed) == 1:
        token = records.new_token()
        xargs = {**(xargs if isinstance(xargs, dict) else {}), records.RECORD_ARG: token}
    if xargs is not None:
        parsed = {**parsed, "vllm_xargs": xargs}
    return json.dumps(parsed).encode(), token


def _with_length(headers: Any, length: int) -> list[tuple[bytes, bytes]]:
    kept = [(k, v) for k, v in headers if k.lower() != b"content-length"]
    return [*kept, (b"content-length", str(length).encode())]


_last_prune = 0.0


async def _taken(directory: Path, token: str) -> Any:
    """The engine's record of the reply (``records.take``), waiting a little for a file the
    engine may still be renaming; stale records pruned at most once a minute."""
    global _last_prune
    for _ in range(10):
        drawn = records.take(directory, token)
        if drawn is not None:
            break
        await asyncio.sleep(0.02)
    if time.monotonic() - _last_prune > 60.0:
        _last_prune = time.monotonic()
        records.prune(directory)
    return drawn
