"""The generator as seen from the web: its OpenAI-compatible chat endpoint, streamed (SSE).

Only key *names* travel in requests (``vllm_xargs.watermark_key``); values stay in the
generator's key file. Every wait is bounded: connect, each read (the first token included:
the server answers only once it has one) and the whole reply, so no hung generator can hold
a web worker.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import httpx


class GeneratorError(Exception):
    """The generator could not give a reply; ``message`` is safe to show, ``kind`` says why."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind  # "down" | "busy" | "timeout" | "refused" | "broken"


@dataclass(frozen=True)
class ClientConfig:
    url: str = "http://127.0.0.1:8001"
    connect_timeout: float = 3.0
    read_timeout: float = 30.0  # the longest silence accepted, first token included
    max_seconds: float = 180.0  # the longest reply accepted, from request to last token
    token: str = field(default="", repr=False)  # the playground's bearer token (a secret)


@dataclass(frozen=True)
class ChatRequest:
    messages: tuple[dict[str, str], ...]
    key_name: str | None  # the generator's name for the key; None with watermark off
    watermark: bool
    temperature: float
    top_p: float
    max_tokens: int


@dataclass(frozen=True)
class Chunk:
    """One piece of a streamed reply. ``token_ids`` are the new ids when the server sends
    them (vLLM with ``return_token_ids``), else None."""

    text: str = ""
    token_ids: tuple[int, ...] | None = None
    finish_reason: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)


def chat_body(req: ChatRequest) -> dict[str, Any]:
    xargs: dict[str, Any] = (
        {"watermark_key": req.key_name} if req.watermark else {"watermarking": False}
    )
    return {
        "messages": list(req.messages),
        "temperature": req.temperature,
        "top_p": req.top_p,
        "max_tokens": req.max_tokens,
        "stream": True,
        "return_token_ids": True,
        "vllm_xargs": xargs,
    }


def stream_chat(config: ClientConfig, req: ChatRequest) -> Iterator[Chunk]:
    """Yield the reply as it grows; raise GeneratorError with a clear message otherwise.

    Closing the iterator (the user pressed Stop) closes the connection, which makes the
    generator stop decoding.
    """
    timeout = httpx.Timeout(
        config.read_timeout, connect=config.connect_timeout, pool=config.connect_timeout
    )
    deadline = time.monotonic() + config.max_seconds
    url = config.url.rstrip("/") + "/v1/chat/completions"
    try:
        with httpx.Client(timeout=timeout) as client:
            headers = {"Authorization": f"Bearer {config.token}"} if config.token else {}
            with client.stream("POST", url, json=chat_body(req), headers=headers) as response:
                _raise_for_status(response)
                headers = _header_provenance(response.headers)
                for chunk in _chunks(response.iter_lines()):
                    yield replace(chunk, provenance={**headers, **chunk.provenance})
                    if time.monotonic() > deadline:
                        raise GeneratorError(
                            f"the reply took longer than {config.max_seconds:.0f} s and was "
                            "cut off",
                            "timeout",
                        )
    except httpx.ConnectError:
        raise GeneratorError("the generator is not reachable (is it running?)", "down") from None
    except (httpx.ReadTimeout, httpx.PoolTimeout, httpx.ConnectTimeout, httpx.WriteTimeout):
        raise GeneratorError(
            f"the generator is busy or slow: nothing came for {config.read_timeout:.0f} s",
            "timeout",
        ) from None
    except (httpx.RemoteProtocolError, httpx.ReadError):
        raise GeneratorError("the generator closed the connection mid-reply", "broken") from None


def _raise_for_status(response: httpx.Response) -> None:
    if response.status_code == 200:
        return
    response.read()
    if response.status_code in (429, 503):
        raise GeneratorError("the generator is overloaded; try again in a moment", "busy")
    if 400 <= response.status_code < 500:
        raise GeneratorError(f"the generator refused the request: {_message(response)}", "refused")
    raise GeneratorError(f"the generator failed (HTTP {response.status_code})", "broken")


def _message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error", {})
        text = error.get("message") if isinstance(error, dict) else str(error)
    except (ValueError, AttributeError):
        text = None
    return str(text or f"HTTP {response.status_code}")[:300]


def _chunks(lines: Iterator[str]) -> Iterator[Chunk]:
    """Parse OpenAI SSE lines (``data: {json}`` ... ``data: [DONE]``) into chunks."""
    for line in lines:
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        try:
            event = json.loads(data)
        except json.JSONDecodeError:
            raise GeneratorError("the generator sent a malformed event", "broken") from None
        yield _chunk(event)


def _chunk(event: dict[str, Any]) -> Chunk:
    if "error" in event:
        # vLLM validates a streamed request inside the stream: a 4xx code there is a refusal.
        if _error_code(event["error"]) // 100 == 4:
            raise GeneratorError(
                f"the generator refused the request: {_error_text(event['error'])}", "refused"
            )
        raise GeneratorError(f"the generator failed: {_error_text(event['error'])}", "broken")
    choices = event.get("choices") or [{}]
    choice = choices[0]
    delta = choice.get("delta") or {}
    ids = choice.get("token_ids")
    return Chunk(
        text=delta.get("content") or choice.get("text") or "",
        token_ids=tuple(int(i) for i in ids) if isinstance(ids, list) else None,
        finish_reason=choice.get("finish_reason"),
        provenance=event.get("provenance") or _model_only(event),
    )


def _header_provenance(headers: httpx.Headers) -> dict[str, Any]:
    """Provenance from the generator's ``x-provenance-*`` headers (the only place vLLM's own
    server reports the key name, watermark and tokenizer; our server also puts it in JSON)."""
    found: dict[str, Any] = {}
    if "x-provenance-watermarked" in headers:
        found["watermarked"] = headers["x-provenance-watermarked"] == "true"
    if headers.get("x-provenance-key", "none") != "none":
        found["key"] = headers["x-provenance-key"]
    for name, field_name in (("model", "model"), ("tokenizer", "tokenizer_hash")):
        if headers.get(f"x-provenance-{name}", "unknown") != "unknown":
            found[field_name] = headers[f"x-provenance-{name}"]
    return found


def _model_only(event: dict[str, Any]) -> dict[str, Any]:
    # vLLM's own server reports provenance in headers only; its chunks still name the model.
    return {"model": event["model"]} if event.get("model") else {}


def _error_code(error: Any) -> int:
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, int) and not isinstance(code, bool) else 0


def _error_text(error: Any) -> str:
    return str(error.get("message") if isinstance(error, dict) else error)[:300]
