"""Reads from the registry, including the one place where key values are decrypted."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from django.db.models import Q, QuerySet
from django.views.decorators.debug import sensitive_variables

from detector.config import KeyConfig
from provenance.accounts.models import Team
from provenance.errors import ProblemError
from provenance.keys.crypto import decrypt_value
from provenance.keys.models import WatermarkKey, registry_config


class KeySelectionError(ProblemError):
    """The requested keys cannot be used; the message is safe to show."""


def keys_visible_to(team: Team | None) -> QuerySet[WatermarkKey]:
    """Keys a team may test against: its own and those shared with every team."""
    if team is None:
        return WatermarkKey.objects.none()
    return WatermarkKey.objects.filter(Q(team=team) | Q(shared=True)).select_related(
        "tokenizer", "team"
    )


def keys_for_check(team: Team | None, key_ids: Iterable[Any] | None = None) -> list[WatermarkKey]:
    """The hypotheses of a check: every usable key, or the active subset the caller named.

    Retired keys are tested by default (old text must still be detected) but cannot be
    named explicitly: a caller who narrows the set asks about keys in use.
    """
    visible = keys_visible_to(team).order_by("created_at", "id")
    if key_ids is None:
        keys = list(visible)
        if not keys:
            raise KeySelectionError("your team has no watermark keys to test against")
        return keys
    wanted = _unique_ids(key_ids)
    found = {key.id: key for key in visible.filter(id__in=wanted)}
    missing = [key_id for key_id in wanted if key_id not in found]
    if missing:
        raise KeySelectionError(f"unknown key id(s): {', '.join(map(str, missing))}")
    retired = [key_id for key_id in wanted if found[key_id].status != WatermarkKey.Status.ACTIVE]
    if retired:
        raise KeySelectionError(f"retired key id(s): {', '.join(map(str, retired))}")
    return [found[key_id] for key_id in wanted]


def _unique_ids(key_ids: Iterable[Any]) -> list[uuid.UUID]:
    wanted: list[uuid.UUID] = []
    for raw in key_ids:
        try:
            key_id = raw if isinstance(raw, uuid.UUID) else uuid.UUID(str(raw))
        except ValueError:
            raise KeySelectionError("key ids must be UUIDs") from None
        if key_id not in wanted:
            wanted.append(key_id)
    if not wanted:
        raise KeySelectionError("name at least one key id, or omit key_ids to test all")
    return wanted


@sensitive_variables()  # every local, in Django's error reports
def key_config(key: WatermarkKey) -> KeyConfig:
    """Decrypt a key into the one key model. Call only where the value is used."""
    return registry_config(
        value=decrypt_value(key.encrypted_value),
        algorithm=key.algorithm,
        alpha=key.alpha,
        context_width=key.context_width,
        deduplicate=key.deduplicate,
        name=key.name,
    )
