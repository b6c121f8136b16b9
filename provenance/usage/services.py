"""The audit log of detector use: the detector is an oracle for forging and scrubbing."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.contrib.auth.models import User

from provenance.accounts.models import Team
from provenance.checks.models import Audit, Check, DetectionLog
from provenance.keys.models import WatermarkKey

if TYPE_CHECKING:
    from provenance.streams.models import Stream


def text_sha256(text: str) -> str:
    """The digest kept after the text itself is purged (the detection log holds it too)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def detection_log_create(
    *,
    user: User,
    team: Team,
    kind: str,
    keys: Sequence[WatermarkKey],
    num_texts: int,
    check: Check | None = None,
    audit: Audit | None = None,
    stream: Stream | None = None,
    text: str | None = None,
) -> DetectionLog:
    """Who checked what against which keys (ids and names only; never a key value). The
    daily quota counts these rows."""
    log = detection_log_new(
        user=user,
        team=team,
        kind=kind,
        keys=keys,
        num_texts=num_texts,
        check=check,
        audit=audit,
        stream=stream,
        text=text,
    )
    log.save(force_insert=True)
    return log


def detection_log_new(
    *,
    user: User,
    team: Team,
    kind: str,
    keys: Sequence[WatermarkKey],
    num_texts: int,
    check: Check | None = None,
    audit: Audit | None = None,
    stream: Stream | None = None,
    text: str | None = None,
) -> DetectionLog:
    """The row ``detection_log_create`` writes, not yet saved."""
    return DetectionLog(
        user=user,
        username=user.get_username(),
        team=team,
        kind=kind,
        check_run=check,
        audit=audit,
        stream=stream,
        num_texts=num_texts,
        text_sha256=text_sha256(text) if text else "",
        key_ids=[str(key.id) for key in keys],
        key_names=[key.name for key in keys],
    )
