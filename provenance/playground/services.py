"""Writes for the playground: start a reply, stream it from the generator while the detector
scores the tokens so far, store it with its provenance, and send a reply to the checks."""

from __future__ import annotations

import logging
import math
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from detector.core.config import KeyConfig
from detector.evidence.stream import EvidenceStream
from detector.text.wrapper import without_wrappers
from provenance.accounts.selectors import is_auditor, team_for_user
from provenance.checks.models import Check
from provenance.checks.services import check_create
from provenance.errors import ProblemError
from provenance.keys.models import WatermarkKey
from provenance.keys.selectors import key_config
from provenance.playground import selectors
from provenance.playground.client import (
    ChatRequest,
    Chunk,
    ClientConfig,
    GeneratorError,
    stream_chat,
)
from provenance.playground.keyfile import generator_key_name
from provenance.playground.models import Conversation, Message
from provenance.scoring.service import ScoringError, tokenizer_load

logger = logging.getLogger(__name__)

MAX_PROMPT_CHARS = 4000
_streams_lock = threading.Lock()
_streams_open = 0


def _config() -> dict[str, Any]:
    return settings.PROVENANCE_PLAYGROUND


def client_config() -> ClientConfig:
    c = _config()
    return ClientConfig(
        url=c["GENERATOR_URL"],
        connect_timeout=c["CONNECT_TIMEOUT"],
        read_timeout=c["READ_TIMEOUT"],
        max_seconds=c["MAX_SECONDS"],
        token=c.get("GENERATOR_TOKEN", ""),
    )


def conversation_create(*, user: User) -> Conversation:
    team = team_for_user(user)
    if team is None:
        raise ProblemError("your account belongs to no team", status_code=403)
    return Conversation.objects.create(team=team, user=user)


def sampling_limits() -> dict[str, Any]:
    """Bounds and defaults of the page's controls (kept short: 2 cores decode ~10 tokens/s)."""
    return {"max_tokens": _config()["MAX_TOKENS"], "default_max_tokens": 80}


@dataclass(frozen=True)
class Sampling:
    temperature: float
    top_p: float
    max_tokens: int

    @classmethod
    def parse(cls, temperature: Any, top_p: Any, max_tokens: Any) -> Sampling:
        limit = _config()["MAX_TOKENS"]
        t = _number(temperature, "temperature", 0.0, 2.0)
        p = _number(top_p, "top-p", 0.0, 1.0)
        if p == 0.0:
            raise ProblemError(gettext("top-p must be greater than 0"))
        n = _number(max_tokens, "max tokens", 1, limit)
        if n != int(n):
            raise ProblemError(gettext("max tokens must be a whole number"))
        return cls(t, p, int(n))


def _number(raw: Any, label: str, low: float, high: float) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ProblemError(gettext("%(label)s must be a number") % {"label": label}) from None
    if not math.isfinite(value) or not low <= value <= high:
        raise ProblemError(
            gettext("%(label)s must lie in [%(low)s, %(high)s]")
            % {"label": label, "low": f"{low:g}", "high": f"{high:g}"}
        )
    return value


def _key_for(user: User, key_id: Any) -> WatermarkKey:
    """The chosen key, which must be an active key of the user's own team."""
    key = selectors.playground_keys(user).filter(pk=_key_pk(key_id)).first()
    if key is None:
        raise ProblemError(gettext("choose one of your team's active keys"), status_code=403)
    return key


def _key_pk(key_id: Any) -> uuid.UUID:
    # Key ids are UUIDs arriving as form strings; one that is not a UUID matches no key.
    if key_id in (None, ""):
        raise ProblemError(gettext("choose a key"))
    try:
        return uuid.UUID(str(key_id))
    except ValueError:
        raise ProblemError(
            gettext("choose one of your team's active keys"), status_code=403
        ) from None


@transaction.atomic
def reply_start(
    *,
    user: User,
    conversation: Conversation,
    content: str,
    key_id: Any,
    watermark: bool,
    sampling: Sampling,
) -> Message:
    """Store the user's turn (none on a retry: empty content) and an empty reply to stream."""
    key = _key_for(user, key_id)
    _abandoned_fail(conversation)
    content = (content or "").strip()
    if len(content) > MAX_PROMPT_CHARS:
        raise ProblemError(
            gettext("the message is longer than %(limit)s characters") % {"limit": MAX_PROMPT_CHARS}
        )
    if "\x00" in content:
        raise ProblemError(gettext("the message contains a NUL character"))
    if content:
        Message.objects.create(conversation=conversation, role=Message.Role.USER, content=content)
        if not conversation.title:
            conversation.title = content[:80]
            conversation.save(update_fields=["title"])
    elif not _awaits_reply(conversation):
        raise ProblemError(gettext("type a message first"))
    return Message.objects.create(
        conversation=conversation,
        role=Message.Role.ASSISTANT,
        status=Message.Status.STREAMING,
        key=key,
        key_name=key.name,
        generator_key=generator_key_name(key) if watermark else "",
        watermarked=watermark,
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        max_tokens=sampling.max_tokens,
    )


def _abandoned_fail(conversation: Conversation) -> None:
    """Replies left "streaming" by a web process that died: no stream lives this long."""
    c = _config()
    cutoff = timezone.now() - timedelta(seconds=c["MAX_SECONDS"] + c["READ_TIMEOUT"])
    conversation.messages.filter(status=Message.Status.STREAMING, created_at__lt=cutoff).update(
        status=Message.Status.FAILED, error="interrupted", finished_at=timezone.now()
    )


def _awaits_reply(conversation: Conversation) -> bool:
    """A retry is possible when the last turn that counts is the user's."""
    turns = selectors.history(conversation)
    return bool(turns) and turns[-1]["role"] == Message.Role.USER


class Meter:
    """The reply's evidence as it streams, under its key: an anytime-valid e-process
    (``detector.evidence.stream``), so the verdict may be read after every token. ``log10_p`` is the
    anytime p-value (1 / the largest e-value so far); basic-tier teams see it rounded down to
    its power of ten."""

    def __init__(self, key: WatermarkKey, *, auditor: bool = True) -> None:
        self.tokenizer = tokenizer_load(key.tokenizer)
        self.auditor = auditor
        self._config: KeyConfig = key_config(key)
        self._restart()

    def __repr__(self) -> str:  # the config holds the key value
        return "<Meter>"

    def _restart(self) -> None:
        self._stream = EvidenceStream(self._config, threshold=settings.PROVENANCE_THRESHOLD)
        self._fed: list[int] = []

    def read(self, token_ids: list[int]) -> dict[str, Any]:
        if token_ids[: len(self._fed)] != self._fed:
            self._restart()  # re-tokenized text changed earlier tokens: a new sequence
        state = self._stream.extend(token_ids[len(self._fed) :])
        self._fed = list(token_ids)
        lp = state.log10_p_anytime
        return {
            "log10_p": lp if self.auditor else float(math.floor(lp)),
            "num_tokens": state.num_tokens,
            "num_scored": state.num_scored_tokens,
            "watermarked": state.is_watermarked,
        }


def _acquire_stream() -> bool:
    global _streams_open
    with _streams_lock:
        if _streams_open >= _config()["MAX_STREAMS"]:
            return False
        _streams_open += 1
        return True


def _release_stream() -> None:
    global _streams_open
    with _streams_lock:
        _streams_open -= 1


def reply_stream(message: Message) -> Iterator[dict[str, Any]]:
    """Events for the page: start, token (text delta + meter) ..., then done or error.

    The reply is stored however the stream ends: done, stopped (the client went away, which
    closes this generator) or failed (the generator's message, safe to show).
    """
    if not _acquire_stream():
        _finish(
            message, Message.Status.FAILED, error=gettext("too many replies are streaming; retry")
        )
        yield _error_event(message, "too many replies are streaming right now; retry", "busy")
        return
    state = _Reply(message)
    try:
        yield {"type": "start", "message": str(message.pk), "key": message.key_name}
        yield from state.run()
    except GeneratorExit:
        if not state.stored:  # a client gone after the last event leaves the reply as it was
            state.status = Message.Status.STOPPED
        raise
    finally:
        _release_stream()
        if not state.stored:
            state.save()


class _Reply:
    """The growing reply: text, token ids and the last meter reading."""

    def __init__(self, message: Message) -> None:
        self.message = message
        self.text = ""
        self.ids: list[int] = []
        self.exact = True
        self.provenance: dict[str, Any] = {}
        self.finish = ""
        self.reading: dict[str, Any] = {}
        self.status = Message.Status.FAILED
        self.error = "interrupted"
        self.meter: Meter | None = None
        self.stored = False  # the reply's final state is saved (its last event follows)

    def run(self) -> Iterator[dict[str, Any]]:
        try:
            self.meter = (
                Meter(self.message.key, auditor=is_auditor(self.message.conversation.user))
                if self.message.key
                else None
            )
        except ScoringError as exc:
            logger.warning("playground meter unavailable: %s", exc)
        try:
            for chunk in stream_chat(client_config(), self._request()):
                event = self._feed(chunk)
                if event is not None:
                    yield event
        except GeneratorError as exc:
            self.status, self.error = Message.Status.FAILED, exc.message
            self.store()  # before the last event: a page that reloads on it sees the reply so
            yield _error_event(self.message, exc.message, exc.kind)
            return
        self.status, self.error = Message.Status.DONE, ""
        self.store()
        yield {"type": "done", **self._summary()}

    def _request(self) -> ChatRequest:
        m = self.message
        return ChatRequest(
            messages=tuple(selectors.history(m.conversation)),
            key_name=m.generator_key or None,
            watermark=bool(m.watermarked),
            temperature=float(m.temperature or 0.0),
            top_p=float(m.top_p or 1.0),
            max_tokens=int(m.max_tokens or 1),
        )

    def _feed(self, chunk: Chunk) -> dict[str, Any] | None:
        self.provenance = chunk.provenance or self.provenance
        self.finish = chunk.finish_reason or self.finish
        grew = bool(chunk.text) or bool(chunk.token_ids)
        self.text += chunk.text
        if chunk.token_ids is not None:
            self.ids.extend(chunk.token_ids)
        elif chunk.text and without_wrappers(chunk.text)[0]:
            self.exact = False  # the server sent no ids: count the text's tokens instead
        # (a C2PA wrapper's event, Content Credentials after the last token, holds no token)
        if not grew:
            return None
        self.reading = self._read()
        return {"type": "token", "text": chunk.text, **self.reading}

    def _token_ids(self) -> list[int]:
        if self.exact or self.meter is None:
            return self.ids
        return [int(i) for i in self.meter.tokenizer.encode(self.text)]

    def _read(self) -> dict[str, Any]:
        return self.meter.read(self._token_ids()) if self.meter else {}

    def _summary(self) -> dict[str, Any]:
        return {
            "message": str(self.message.pk),
            "finish_reason": self.finish,
            "watermarked": bool(self.provenance.get("watermarked", self.message.watermarked)),
            "model": self.provenance.get("model", ""),
            "tokenizer_mismatch": self._tokenizer_mismatch(),
            **self.reading,
        }

    def _tokenizer_mismatch(self) -> bool:
        """The generator's tokenizer is not the key's: the meter and checks would mislead."""
        reported = self.provenance.get("tokenizer_hash")
        key = self.message.key
        return bool(reported and key and reported != key.tokenizer.content_hash)

    def store(self) -> None:
        self.save()
        self.stored = True

    def save(self) -> None:
        p = self.provenance
        _finish(
            self.message,
            self.status,
            error=self.error,
            content=self.text,
            token_ids=self._token_ids(),
            token_ids_exact=self.exact and bool(self.ids),
            model=str(p.get("model") or ""),
            tokenizer_hash=str(p.get("tokenizer_hash") or ""),
            watermarked=bool(p["watermarked"]) if "watermarked" in p else self.message.watermarked,
            finish_reason=self.finish if self.status == Message.Status.DONE else self.status,
            log10_p=self.reading.get("log10_p"),
        )


def _finish(message: Message, status: str, **fields: Any) -> None:
    Message.objects.filter(pk=message.pk).update(
        status=status, finished_at=timezone.now(), **fields
    )


def _error_event(message: Message, text: str, kind: str) -> dict[str, Any]:
    return {"type": "error", "message": str(message.pk), "error": text, "kind": kind, "retry": True}


def reply_check(*, user: User, message: Message, text: str | None = None) -> Check:
    """Paste-and-check a reply (or the user's edited copy of it) against the team's keys."""
    if message.status == Message.Status.STREAMING:
        raise ProblemError("this reply is still streaming")
    return check_create(user=user, text=message.content if text is None else text)
