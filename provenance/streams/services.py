"""Streaming detection over HTTP: open a stream on some keys, append text or token ids, read
the anytime-valid state (``detector.evidence.stream``) after every append. Checking after every
append is valid: the running verdict is the e-process reaching 1 / threshold, not a re-run
fixed test. A closed stream's final answer is the detector's one decision on all its tokens
from the scoring service checks call (``provenance.scoring.service``), as a check of the same
text gets."""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.http import Http404

from detector.evidence.stream import EvidenceStream, StreamState, split_stable
from provenance.accounts.models import Team
from provenance.accounts.selectors import team_for_user
from provenance.checks import tiers
from provenance.errors import Conflict, PayloadTooLarge, ProblemError
from provenance.keys.models import WatermarkKey
from provenance.keys.selectors import key_config, keys_for_check, prepare_keys
from provenance.scoring.service import ScoringError, score_ids, tokenizer_load
from provenance.streams.models import Stream
from provenance.usage.models import DetectionLog
from provenance.usage.services import detection_log_create, quota_consume


def _team(user: User) -> Team:
    team = team_for_user(user)
    if team is None:
        raise ProblemError("your account belongs to no team", status_code=403)
    return team


def _keys(stream: Stream) -> list[WatermarkKey]:
    wanted = [uuid.UUID(k) for k in stream.key_ids]
    found = WatermarkKey.objects.select_related("tokenizer").in_bulk(wanted)
    if len(found) != len(wanted):
        raise Conflict("a key of this stream was deleted; open a new stream")
    return [found[k] for k in wanted]


def _evidence(keys: list[WatermarkKey], threshold: float, state: bytes | None) -> EvidenceStream:
    configs = [key_config(key) for key in keys]
    if state is None:
        return EvidenceStream(configs, threshold=threshold)
    return EvidenceStream.from_bytes(state, configs, threshold=threshold)


def stream_create(
    *, user: User, key_ids: Sequence[Any] | None = None
) -> tuple[Stream, StreamState]:
    """Open a stream on the named keys (default: every key of the team), one tokenizer."""
    team = _team(user)
    keys = keys_for_check(team, key_ids)
    tokenizers = {key.tokenizer_id for key in keys}
    if len(tokenizers) != 1:
        raise ProblemError("a stream's keys must share one tokenizer; name them in key_ids")
    threshold = settings.PROVENANCE_THRESHOLD
    evidence = _evidence(keys, threshold, None)
    stream = Stream.objects.create(
        team=team,
        user=user,
        key_ids=[str(key.id) for key in keys],
        tokenizer=keys[0].tokenizer,
        threshold=threshold,
        state=evidence.to_bytes(),
    )
    return stream, evidence.state()


def stream_get(user: User, stream_id: Any) -> Stream:
    """A stream of the caller's own (streams are per user: 404 for anyone else)."""
    stream = Stream.objects.filter(id=stream_id, user_id=user.pk).first()
    if stream is None:
        raise Http404("no such stream")
    return stream


def _token_ids(value: Any) -> list[int]:
    """The ids of an append, their count checked before any of them (413 past the stream's
    cap: no append may hold more)."""
    limit = settings.PROVENANCE_STREAM_MAX_TOKENS
    if isinstance(value, list) and len(value) > limit:
        raise PayloadTooLarge(f"a stream holds at most {limit} tokens")
    if not isinstance(value, list) or not all(
        isinstance(t, int) and not isinstance(t, bool) and 0 <= t < 2**32 for t in value
    ):
        raise ProblemError("token_ids must be a list of integers in [0, 2**32)")
    return value


def stream_append(
    *,
    user: User,
    stream_id: Any,
    text: str | None = None,
    token_ids: Any = None,
    final: bool = False,
) -> tuple[Stream, StreamState]:
    """Append a text delta or token ids; returns the state after them (nothing is stored on
    bad input). ``final`` scores the pending last word of a text stream and closes it.

    Each append that adds tokens is one answer of the detector: it takes one text from the
    daily quota and writes a detection-log row (kind ``stream``; the delta's SHA-256 for
    text). An append whose text stays pending (the last word may still grow) answers the
    unchanged state and is not logged, but it is counted: the text is read all the same.
    Pending text longer than ``PROVENANCE_STREAM_MAX_PENDING`` characters is scored as it
    stands (text without word boundaries, such as Chinese, is committed in such pieces), and
    a text delta is at most ``PROVENANCE_MAX_TEXT_BYTES``."""
    if (text is None) == (token_ids is None):
        raise ProblemError("send either text or token_ids")
    with transaction.atomic():
        stream = stream_get(user, stream_id)
        stream = Stream.objects.select_for_update().get(pk=stream.pk)  # appends in order
        if stream.closed:
            raise Conflict("this stream is closed")
        ids, pending = _new_tokens(stream, text, token_ids, final)
        limit = settings.PROVENANCE_STREAM_MAX_TOKENS
        if stream.num_tokens + len(ids) > limit:
            raise PayloadTooLarge(f"a stream holds at most {limit} tokens")
        keys = _keys(stream)
        if ids or text:  # every text read counts against the quota, pending or scored
            quota_consume(user, 1)
        if ids:  # an append that scores tokens is one answer of the detector
            detection_log_create(
                user=user,
                team=stream.team,
                kind=DetectionLog.Kind.STREAM,
                keys=keys,
                num_texts=1,
                stream=stream,
                text=text,
            )
        evidence = _evidence(keys, stream.threshold, bytes(stream.state))
        state = evidence.extend(ids)
        stream.state, stream.pending_text = evidence.to_bytes(), pending
        stream.token_ids = bytes(stream.token_ids) + np.asarray(ids, "<u4").tobytes()
        stream.num_tokens, stream.is_watermarked = state.num_tokens, state.is_watermarked
        stream.closed = final
        if final:
            stream.decision = _final_decision(stream, keys)
            stream.is_watermarked = stream.decision["is_watermarked"]
        stream.save()
    return stream, state


def _final_decision(stream: Stream, keys: list[WatermarkKey]) -> dict[str, Any]:
    """The detector's decision on every token of the stream from the scoring service checks
    call (``provenance.scoring.service.score_ids``: the tokenizer's n-gram table, each key's
    measured power and false-positive rate), so it equals a check of the stream's text:
    ``Decision.summary`` with the best key's name and its measured false-positive rate."""
    ids = np.frombuffer(bytes(stream.token_ids), "<u4").astype(np.int64)
    try:
        result = score_ids(ids, prepare_keys(keys), threshold=stream.threshold)
    except ScoringError as exc:
        raise ProblemError(str(exc), status_code=503) from None
    assert result.decision is not None
    out = result.decision.summary()
    best = result.best
    out["best_key"] = None if best is None else result.hypotheses[best].key.name
    out["key_measured_fpr"] = result.key_measured_fpr
    return out


def _new_tokens(stream: Stream, text: Any, token_ids: Any, final: bool) -> tuple[list[int], str]:
    if token_ids is not None:
        if stream.pending_text:
            raise ProblemError("this stream takes text; send text deltas")
        return _token_ids(token_ids), ""
    if not isinstance(text, str) or "\x00" in text:
        raise ProblemError("text must be a string without NUL characters")
    limit = settings.PROVENANCE_MAX_TEXT_BYTES
    if len(text) > limit or len(text.encode("utf-8", "surrogatepass")) > limit:
        raise PayloadTooLarge(f"a text delta is at most {limit} bytes")
    try:
        tokenizer = tokenizer_load(stream.tokenizer)
    except ScoringError as exc:
        raise ProblemError(str(exc), status_code=503) from None
    ids, pending = split_stable(tokenizer, stream.pending_text + text, final=final)
    if len(pending) > settings.PROVENANCE_STREAM_MAX_PENDING:  # no word boundary: commit it
        ids += split_stable(tokenizer, pending, final=True)[0]
        pending = ""
    return ids, pending


def state_body(stream: Stream, state: StreamState, keys: list[str], auditor: bool) -> dict:
    """The API's view of a state; basic tier: verdict and p rounded down to a power of ten."""
    body: dict[str, Any] = {
        "id": str(stream.id),
        "num_tokens": state.num_tokens,
        "num_scored_tokens": state.num_scored_tokens,
        "is_watermarked": state.is_watermarked,
        "is_watermarked_anytime": state.is_watermarked,
        "threshold": stream.threshold,
        "best_key": keys[state.best] if state.best is not None and state.is_watermarked else None,
        "closed": stream.closed,
    }
    final = stream.decision if stream.closed else None
    if final is not None:  # the final answer: the detector's decision on the whole stream
        shown = final if auditor else tiers.redact(final)
        body.update(
            is_watermarked=final["is_watermarked"],
            verdict=final["verdict"],
            verdict_reason=final["verdict_reason"],
            p_value=shown["p_value"],
            log10_p=shown["log10_p"],
            decided_by=final["decided_by"],
            correction=final.get("correction"),
            best_key=final["best_key"] if final["is_watermarked"] else None,
            spans=shown["spans"],
        )
    if auditor:
        body["log10_p_anytime"] = state.log10_p_anytime
        body["log10_e_value"] = state.log10_e_value
        body["keys"] = [
            {
                "name": name,
                "num_scored_tokens": k.num_scored_tokens,
                "log10_e_value": k.log10_e_value,
            }
            for name, k in zip(keys, state.keys, strict=True)
        ]
    else:
        body["log10_p_anytime"] = float(math.floor(state.log10_p_anytime))
    return body
