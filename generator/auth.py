"""Who may generate under which key: bearer tokens, per-client grants, and the gate that
enforces them in front of our server and vLLM's.

Without this, any caller that reaches the generator could write text under any team's key
(forging that team's provenance) or opt out of watermarking. A clients file beside the key
file maps each token (stored as its SHA-256, never in clear) to the key names it may use and
whether it may opt out::

    {"clients": {"playground": {"token_sha256": "<hex>", "keys": ["*"], "opt_out": true},
                 "team-a-app": {"token_sha256": "<hex>", "keys": ["team-a"], "opt_out": false}}}

``AuthGate`` (pure ASGI) answers 401 without a valid token and 403 for a key the token may not
use (the same answer whether that key exists or not) or a refused opt-out, including the
opt-out by other means: sampling settings below the floors of ``generator.floors`` (top_k 1, a
top_p or min_p that keeps one token, a near-zero temperature, beam search), under which the
keyed draw has no real choice and the reply would carry nothing, alone or together. Every field
of the body is read against the allowlist of ``generator.fields``: a field it does not list is
a 403 naming it, and one that lets the client see or steer the distribution outside the keyed
draw (``logprobs``, ``echo``, ``logit_bias``, structured output, ``n > 1``, ...) is refused
like the settings above, and so is a list of several prompts, which asks for several
completions as ``n`` does (they would share one draw record). A key is chosen only by a
non-empty name the token may use, or by the server's default where the token may use it and no
name is given: an explicit null, an empty string or a non-string is the same 403 as another
team's name. It then rewrites the request's ``vllm_xargs`` to exactly what it authorized, so no
field it did not read (a duplicate JSON key, a top-level ``watermarking``, an xargs entry)
reaches the engine, and writes every sampling setting of a watermarked request at the value it
judged (an unset one at ``generator.fields.SAMPLING_DEFAULTS``): vLLM fills unset settings from
the model's ``generation_config`` after the gate, which could lower them below the floors
unseen. Only the generation routes, the model list and the health probes pass; every other
route of vLLM's server (adapters, tokenizer, responses, websockets) is closed. Each generation
is logged: client, key name, model, token count, request id; never the prompt, and only values
the gate validated (a model name other than the served one, or a key name a key file could not
hold, is logged as ``other`` / ``invalid``), each through ``generator.config.printable``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator import config, fields
from generator.config import CLIENTS_FILE_ENV, DEFAULT_KEY_ENV, ENFORCE_ENV, MODEL_ENV
from generator.floors import SamplingFloors

__all__ = ["CLIENTS_FILE_ENV", "DEFAULT_KEY_ENV", "ENFORCE_ENV", "MODEL_ENV"]  # re-exported
GENERATION_PATHS = ("/v1/completions", "/v1/chat/completions")
OPEN_PATHS = ("/health", "/ping")  # liveness probes carry no data
TOKEN_PATHS = ("/v1/models", "/version")
ANY_KEY = "*"
log = logging.getLogger("generator.access")


class ClientsFileError(ValueError):
    """The clients file is malformed (the message holds no token)."""


class AccessDenied(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Client:
    name: str
    token_sha256: str
    keys: frozenset[str]
    opt_out: bool

    def may_use(self, key_name: str) -> bool:
        return ANY_KEY in self.keys or key_name in self.keys


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _client(name: str, entry: Any) -> Client:
    if not isinstance(entry, Mapping):
        raise ClientsFileError(f"client {name!r} must be an object")
    digest, keys, opt_out = entry.get("token_sha256"), entry.get("keys", []), entry.get("opt_out")
    if not isinstance(digest, str) or len(digest) != 64:
        raise ClientsFileError(f"client {name!r} needs token_sha256 (64 hex digits)")
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise ClientsFileError(f"client {name!r}: keys must be a list of key names")
    if not isinstance(opt_out, bool):
        raise ClientsFileError(f"client {name!r}: opt_out must be true or false")
    return Client(name, digest.lower(), frozenset(keys), opt_out)


class ClientRegistry:
    """Clients by token digest; follows its file (a rewritten file applies to the next call)."""

    def __init__(self, clients: list[Client], path: Path | None = None) -> None:
        self.clients = clients
        self.path = path
        self._stamp = _stamp(path) if path else None

    def __repr__(self) -> str:
        return f"ClientRegistry(clients={sorted(c.name for c in self.clients)})"

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> ClientRegistry:
        path = Path(path)
        data = _read_clients(path)
        entries = data.get("clients") if isinstance(data, Mapping) else None
        if not isinstance(entries, Mapping):
            raise ClientsFileError(f'clients file {path} needs {{"clients": {{NAME: ...}}}}')
        return cls([_client(str(n), e) for n, e in entries.items()], path)

    def refreshed(self) -> ClientRegistry:
        if self.path is None or _stamp(self.path) == self._stamp:
            return self
        try:
            return ClientRegistry.from_file(self.path)
        except ClientsFileError as exc:
            log.error("keeping the previous clients: %s", exc)
            return self

    def authenticate(self, authorization: str | None) -> Client:
        """The client of an ``Authorization: Bearer`` header, or AccessDenied(401)."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AccessDenied(401, "a bearer token is required")
        digest = token_digest(token.strip())
        found = None
        for client in self.clients:  # compare with every entry: no early exit to time
            if hmac.compare_digest(client.token_sha256, digest):
                found = client
        if found is None:
            raise AccessDenied(401, "the bearer token is not valid")
        return found


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def issue_token(path: str | os.PathLike[str], name: str, keys: list[str], opt_out: bool) -> str:
    """Add (or replace) client ``name`` in the clients file; returns its new token (shown
    once: the file keeps only the digest). The file is written 0600 and atomically."""
    target = Path(path)
    data: dict[str, Any] = {"clients": {}}
    if target.exists():
        data = _read_clients(target)
    token = secrets.token_urlsafe(32)
    data["clients"][name] = {"token_sha256": token_digest(token), "keys": keys, "opt_out": opt_out}
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".clients-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
    os.replace(tmp, target)
    return token


def _read_clients(path: Path) -> Any:
    """The clients file's JSON; ClientsFileError when it cannot be read, is not JSON, or its
    group or others may write it (anyone who can grants themselves every key)."""
    try:
        text, _, problem = config.read_private(path)
    except OSError as exc:
        raise ClientsFileError(f"cannot read clients file {path}: {exc.strerror}") from None
    except ValueError:  # not UTF-8
        raise ClientsFileError(f"clients file {path} is not valid JSON") from None
    if problem:
        raise ClientsFileError(f"clients file {problem}")
    try:
        return json.loads(text)
    except ValueError:
        raise ClientsFileError(f"clients file {path} is not valid JSON") from None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate field in the request body")
    return dict(pairs)


def authorize(
    client: Client,
    body: dict[str, Any],
    *,
    enforce: bool,
    default_key: str | None,
    floors: SamplingFloors | None = None,
    chat: bool | None = None,
) -> tuple[str | None, dict[str, Any]]:
    """(key name or None for an opt-out, the body with its xargs set to what was granted).

    Every field is read against ``generator.fields`` (``chat``: the chat route; None: judged
    from the body). Settings below ``floors`` (default ``SamplingFloors()``) and steering
    fields count as an opt-out: refused under ``enforce`` or for a client that may not opt
    out. A key is chosen only by a non-empty name the client may use, or by ``default_key``
    where the client may use it; anything else in ``watermark_key`` is one 403."""
    try:
        steering = fields.check(body, "messages" in body if chat is None else chat)
    except fields.FieldRefused as refused:
        raise AccessDenied(refused.status, refused.message) from None
    xargs = body.get("vllm_xargs") or {}
    opting_out = body.get("watermarking") is False or xargs.get("watermarking") in (False, "false")
    rest = {k: v for k, v in xargs.items() if k not in ("watermark_key", "watermarking")}
    clean = {k: v for k, v in body.items() if k != "watermarking"}
    unmarked = (floors or SamplingFloors()).refusal(body)
    reason = f"{unmarked} leaves the keyed draw no real choice" if unmarked else None
    if steering and reason is None:
        verb = "lets" if len(steering) == 1 else "let"
        listed = ", ".join(repr(name) for name in steering)
        reason = f"{listed} {verb} the client see or steer the distribution outside the keyed draw"
    if reason is None and (count := fields.prompts(body.get("prompt"))) > 1:
        reason = (
            f"'prompt' holds {count} prompts: {count} completions in one request, which would "
            "share one draw record (send one prompt per request)"
        )
    if reason and not opting_out:  # an opt-out by other means: the same permissions
        if enforce:
            raise AccessDenied(403, f"watermarking is enforced on this server: {reason}")
        if not client.opt_out:
            raise AccessDenied(403, f"this token may not opt out of watermarking ({reason})")
    if opting_out:
        if enforce:
            raise AccessDenied(403, "watermarking is enforced on this server: no opt-out")
        if not client.opt_out:
            raise AccessDenied(403, "this token may not opt out of watermarking")
        return None, clean | {"vllm_xargs": rest | {"watermarking": False}}
    named = "watermark_key" in xargs
    name = xargs["watermark_key"] if named else default_key
    if name is None and not named:
        if enforce:
            raise AccessDenied(403, "watermarking is enforced on this server: name a key")
        if not client.opt_out:  # a keyless request is served unwatermarked or not at all
            raise AccessDenied(403, "this token may not opt out of watermarking: name a key")
        return None, clean | {"vllm_xargs": rest}
    if not isinstance(name, str) or not name or not client.may_use(name):
        # One answer whether the key exists or not (the gate never looks at the key store),
        # and for a null, an empty or a non-string name: none of them falls to the default.
        raise AccessDenied(403, "this token may not use the requested watermark key")
    # The settings judged above, written out: vLLM would fill unset ones from the model's
    # generation_config, which the floors never saw.
    judged = {k: v for k, v in fields.SAMPLING_DEFAULTS.items() if clean.get(k) is None}
    return name, clean | judged | {"vllm_xargs": rest | {"watermark_key": name}}


def _error(status: int, message: str) -> tuple[dict[str, Any], bytes]:
    body = json.dumps(
        {"error": {"message": message, "type": "access_denied", "code": status}}
    ).encode()
    head = {
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json")]
        + ([(b"www-authenticate", b"Bearer")] if status == 401 else []),
    }
    return head, body


class AuthGate:
    """Pure ASGI gate. With no registry given it reads ``$PROVENANCE_CLIENTS_FILE`` (vLLM's
    ``--middleware`` passes no arguments); ``$PROVENANCE_ENFORCE_WATERMARK=1`` enforces; the
    sampling floors come from ``$PROVENANCE_MIN_*`` (``SamplingFloors.from_env``)."""

    def __init__(
        self,
        app: Any,
        registry: ClientRegistry | None = None,
        *,
        enforce: bool | None = None,
        default_key: str | None = None,
        floors: SamplingFloors | None = None,
    ) -> None:
        self.app = app
        if registry is None:
            path = config.clients_file()
            if not path:
                raise ClientsFileError(f"${CLIENTS_FILE_ENV} must name the clients file")
            registry = ClientRegistry.from_file(path)
        self.registry = registry
        self.enforce = config.enforce_watermark() if enforce is None else enforce
        self.default_key = default_key or config.default_key()
        self.floors = floors if floors is not None else SamplingFloors.from_env()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        path, method = scope.get("path", ""), scope.get("method", "")
        try:
            if path in OPEN_PATHS and method in ("GET", "HEAD"):
                await self.app(scope, receive, send)
                return
            self.registry = self.registry.refreshed()
            client = self.registry.authenticate(_header(scope, b"authorization"))
            if path in TOKEN_PATHS and method in ("GET", "HEAD"):
                await self.app(scope, receive, send)
                return
            if path not in GENERATION_PATHS or method != "POST":
                raise AccessDenied(404, "not found")
            await self._generate(scope, receive, send, client)
        except AccessDenied as denied:
            head, body = _error(denied.status, denied.message)
            await send(head)
            await send({"type": "http.response.body", "body": body})

    async def _generate(
        self, scope: dict[str, Any], receive: Any, send: Any, client: Client
    ) -> None:
        raw = await _read_body(receive)
        try:
            body = json.loads(raw or b"{}", object_pairs_hook=_no_duplicates)
        except ValueError as exc:
            raise AccessDenied(400, f"the request body is not acceptable JSON ({exc})") from None
        if not isinstance(body, dict):
            raise AccessDenied(400, "the request body must be a JSON object")
        name, clean = authorize(
            client,
            body,
            enforce=self.enforce,
            default_key=self.default_key,
            floors=self.floors,
            chat=scope.get("path") == "/v1/chat/completions",
        )
        rewritten = json.dumps(clean).encode()
        request_id = uuid.uuid4().hex
        headers = [(k, v) for k, v in scope.get("headers", []) if k != b"content-length"]
        headers.append((b"content-length", str(len(rewritten)).encode()))
        tally = _Tally()
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": rewritten, "more_body": False}

        async def counted(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                tally.status = message.get("status", 0)
                message = dict(
                    message,
                    headers=[*message.get("headers", []), (b"x-request-id", request_id.encode())],
                )
            elif message["type"] == "http.response.body":
                tally.feed(message.get("body", b""))
            await send(message)

        start = time.monotonic()
        try:
            await self.app(dict(scope, headers=headers), replay, counted)
        finally:
            log.info(
                "generation client=%s key=%s model=%s status=%s tokens=%s request_id=%s ms=%.0f",
                config.printable(client.name),
                config.printable(_logged_key(name)),
                config.printable(_logged_model(clean.get("model"))),
                tally.status,
                tally.tokens(),
                request_id,
                (time.monotonic() - start) * 1000.0,
            )


def _logged_key(name: str | None) -> str:
    """A key name fit for the log: a client with ``*`` may send any string, even a newline."""
    if name is None:
        return "none"
    return name if config.valid_key_name(name) else "invalid"


def _logged_model(requested: Any) -> str:
    """The served model's name (the operator's setting), never a client's string: ``other``
    when the request names another model (the engine refuses it)."""
    served = config.served_model()
    return served if requested in (None, served) else "other"


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


async def _read_body(receive: Any) -> bytes:
    chunks, more = [], True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise AccessDenied(400, "the client went away")
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    return b"".join(chunks)


class _Tally:
    """Completion tokens of a response: ``usage`` when it carries one, else content chunks."""

    def __init__(self) -> None:
        self.status = 0
        self.buffer = b""
        self.usage: int | None = None
        self.chunks = 0

    def feed(self, data: bytes) -> None:
        self.buffer += data
        if self.buffer.lstrip().startswith(b"{"):
            return  # one JSON body: parsed at the end
        *events, self.buffer = self.buffer.split(b"\n\n")
        for event in events:
            self._event(event.strip().removeprefix(b"data:").strip())

    def _event(self, payload: bytes) -> None:
        if not payload.startswith(b"{"):
            return
        try:
            data = json.loads(payload)
        except ValueError:
            return
        usage = data.get("usage") if isinstance(data, dict) else None
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            self.usage = usage["completion_tokens"]
        elif data.get("choices"):
            self.chunks += 1

    def tokens(self) -> int | str:
        if self.buffer.lstrip().startswith(b"{"):
            self._event(self.buffer.strip())
        if self.usage is not None:
            return self.usage
        return f"~{self.chunks}" if self.chunks else 0
