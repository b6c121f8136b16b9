"""Reads from the registry, including the one place where key values are decrypted."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.views.decorators.debug import sensitive_variables

from detector.core.config import KeyConfig
from provenance.accounts.models import Membership, Team
from provenance.accounts.selectors import is_auditor, team_for_user
from provenance.errors import ProblemError
from provenance.keys.models import KeyCalibration, WatermarkKey, registry_config
from provenance.lib import rowcache
from provenance.lib.crypto import KeyDecryptionError, decrypt_value
from provenance.scoring.service import KeyGroup, ScoringError, tokenizer_load


class KeySelectionError(ProblemError):
    """The requested keys cannot be used; the message is safe to show."""


def keys_visible_to(team: Team | None) -> QuerySet[WatermarkKey]:
    """Keys a team may test against: its own and those shared with every team."""
    if team is None:
        return WatermarkKey.objects.none()
    return WatermarkKey.objects.filter(Q(team=team) | Q(shared=True)).select_related(
        "tokenizer", "team"
    )


def exact_for(user: Any, key_ids: Iterable[Any] | None) -> bool:
    """Whether an answer about ``key_ids`` may be exact (per-token data, scores, exact
    p-values, the evidence chart): the caller's team is at the auditor tier and owns every
    one of the keys. A key shared by another team is answered with the verdict and a coarse
    p only, so its owner's key cannot be read token by token (an oracle for forging)."""
    owned = owned_key_ids(user)
    return owned is not None and {str(key_id) for key_id in key_ids or ()} <= owned


def owned_key_ids(user: Any) -> set[str] | None:
    """Ids of the keys the caller's team owns; None below the auditor tier (nothing exact).
    Read on every answer of an auditor's API call: through the row cache
    (``provenance.lib.rowcache``), a read without the ORM's compilation."""
    team = team_for_user(user)
    if team is None or not is_auditor(user):
        return None
    return {
        str(key_id)
        for key_id in rowcache.validated(
            ("keys_owned", team.pk),
            lambda: (
                WatermarkKey.objects.filter(team=team).order_by("id").values_list("id", flat=True)
            ),
        )
    }


class FamilyReason:
    """Why a key is in a team's family (the hypotheses a check tests by default)."""

    OWN_ACTIVE = "own_active"
    OWN_RETIRED = "own_retired_within_window"
    SHARED_ACTIVE = "shared_active"
    SHARED_RETIRED = "shared_retired_within_window"
    ALL = (OWN_ACTIVE, OWN_RETIRED, SHARED_ACTIVE, SHARED_RETIRED)


class LeftOut:
    """Why a visible key is tested only when a check names it."""

    RETIRED_PAST_WINDOW = "retired_past_window"
    SHARED_PAST_CAP = "shared_past_cap"
    ALL = (RETIRED_PAST_WINDOW, SHARED_PAST_CAP)


@dataclass(frozen=True)
class KeyFamily:
    """The hypotheses a team's check tests by default, each with its reason, and how many
    visible keys are left out of it and why (they are tested only when named)."""

    keys: list[WatermarkKey]
    reasons: dict[uuid.UUID, str]
    left_out: dict[uuid.UUID, str]
    retired_window_days: int
    shared_cap: int

    def summary(self) -> dict[str, Any]:
        """The family's size with its reasons, as the keys page and the API show it."""
        return {
            "hypotheses": len(self.keys),
            **{
                reason: sum(r == reason for r in self.reasons.values())
                for reason in FamilyReason.ALL
            },
            "left_out": {why: sum(w == why for w in self.left_out.values()) for why in LeftOut.ALL},
            "retired_window_days": self.retired_window_days,
            "shared_cap": self.shared_cap,
        }


def _visible_keys(team: Team | None) -> list[WatermarkKey]:
    """Every key the team may see, oldest first, each with its latest finished calibration,
    as the database has it now without the ORM's cost on every check
    (``provenance.lib.rowcache``: the rows are read and compared on each call)."""

    def visible() -> QuerySet[WatermarkKey]:
        return (
            keys_visible_to(team)
            .order_by("created_at", "id")
            .annotate(latest_calibration_id=_LATEST_DONE_CALIBRATION)
        )

    return [] if team is None else rowcache.validated(("keys_visible", team.pk), visible)


def key_family(team: Team | None) -> KeyFamily:
    """The one place the default family of a team's checks is built.

    The team's own keys: every active one, and every retired one retired within
    ``PROVENANCE_RETIRED_KEY_WINDOW_DAYS`` (old text is still detected). Keys other teams
    share: at most ``PROVENANCE_MAX_SHARED_KEYS`` in all, the active ones first (newest
    first), then the retired ones within the window, the most recently retired first, so no
    rotation, retirement or sharing elsewhere grows a family past the cap. Every other visible
    key is tested only when a check names it.
    """
    window = settings.PROVENANCE_RETIRED_KEY_WINDOW_DAYS
    cap = settings.PROVENANCE_MAX_SHARED_KEYS
    since = timezone.now() - timedelta(days=window)
    visible = _visible_keys(team)
    reasons: dict[uuid.UUID, str] = {}
    left_out: dict[uuid.UUID, str] = {}
    shared_active: list[WatermarkKey] = []
    shared_retired: list[WatermarkKey] = []
    for key in visible:
        active = key.status == WatermarkKey.Status.ACTIVE
        recent = active or (key.retired_at is not None and key.retired_at >= since)
        if not recent:
            left_out[key.id] = LeftOut.RETIRED_PAST_WINDOW
        elif team is not None and key.team_id == team.id:
            reasons[key.id] = FamilyReason.OWN_ACTIVE if active else FamilyReason.OWN_RETIRED
        else:
            (shared_active if active else shared_retired).append(key)
    shared_active.sort(key=lambda k: (k.created_at, str(k.id)), reverse=True)
    shared_retired.sort(key=lambda k: (k.retired_at, str(k.id)), reverse=True)
    for rank, theirs in enumerate(shared_active + shared_retired):
        if rank >= cap:
            left_out[theirs.id] = LeftOut.SHARED_PAST_CAP
        elif theirs.status == WatermarkKey.Status.ACTIVE:
            reasons[theirs.id] = FamilyReason.SHARED_ACTIVE
        else:
            reasons[theirs.id] = FamilyReason.SHARED_RETIRED
    return KeyFamily(
        keys=[key for key in visible if key.id in reasons],
        reasons=reasons,
        left_out=left_out,
        retired_window_days=window,
        shared_cap=cap,
    )


def keys_for_check(team: Team | None, key_ids: Iterable[Any] | None = None) -> list[WatermarkKey]:
    """The hypotheses of a check: the team's family (``key_family``), or the keys the caller
    named, each once, in the order named. Any key the team may see may be named, a retired
    one past the window or a shared one past the cap included."""
    if key_ids is None:
        keys = key_family(team).keys
        if not keys:
            raise KeySelectionError("your team has no watermark keys to test against")
        return keys
    wanted = _unique_ids(key_ids)
    named = set(wanted)
    found = {key.id: key for key in _visible_keys(team) if key.id in named}
    missing = [key_id for key_id in wanted if key_id not in found]
    if missing:
        raise KeySelectionError(f"unknown key id(s): {_some(missing)}")
    return [found[key_id] for key_id in wanted]


def _some(ids: list[uuid.UUID], shown: int = 3) -> str:
    """A few ids of a list for a message, never the whole list (it echoes what was sent)."""
    head = ", ".join(map(str, ids[:shown]))
    return head if len(ids) <= shown else f"{head} and {len(ids) - shown} more"


def _unique_ids(key_ids: Iterable[Any]) -> list[uuid.UUID]:
    """The named ids in order, each once (linear), at most ``PROVENANCE_MAX_KEY_IDS``."""
    limit = settings.PROVENANCE_MAX_KEY_IDS
    raw_ids = list(key_ids)
    if len(raw_ids) > limit:
        raise KeySelectionError(f"name at most {limit} key ids")
    wanted: dict[uuid.UUID, None] = {}
    for raw in raw_ids:
        try:
            key_id = raw if isinstance(raw, uuid.UUID) else uuid.UUID(str(raw))
        except ValueError:
            raise KeySelectionError("key ids must be UUIDs") from None
        wanted[key_id] = None
    if not wanted:
        raise KeySelectionError("name at least one key id, or omit key_ids to test all")
    return list(wanted)


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


# Each key's most recent finished calibration, read with the key (``keys_for_check``): the
# scoring's ``calibration_facts`` then reads calibrations only for keys that have one, and
# a finished calibration never changes, so what is derived from it is kept per process.
_LATEST_DONE_CALIBRATION = Subquery(
    KeyCalibration.objects.filter(key=OuterRef("pk"), status=KeyCalibration.Status.DONE)
    .order_by("-finished_at")
    .values("id")[:1]
)
LATEST_DONE_CALIBRATION = _LATEST_DONE_CALIBRATION  # for readers of keys by id (scoring tasks)
CalibrationFacts = tuple[int | None, dict[str, Any] | None]  # tokens needed, measured FPR
_facts_of_run: dict[uuid.UUID, CalibrationFacts] = {}
_UNREAD = object()  # a key read without the annotation


def calibration_facts(keys: Iterable[WatermarkKey]) -> dict[uuid.UUID, CalibrationFacts]:
    """Each key's (``calibrated_tokens_needed``, ``measured_fpr``) of its latest finished
    calibration; keys never calibrated are absent. Keys from ``keys_for_check`` carry that
    calibration's id: the calibration itself is read only the first time this process sees
    it (a finished calibration is never changed; a newer one has another id, so a
    recalibration takes effect on the next request). Other keys are read as before."""
    keys = list(keys)
    latest: dict[uuid.UUID, Any] = {
        key.id: getattr(key, "latest_calibration_id", _UNREAD) for key in keys
    }
    annotated = _UNREAD not in latest.values()
    if not annotated:
        runs = latest_calibrations(keys)
        return {key_id: _facts(run) for key_id, run in runs.items()}
    wanted = {run_id for run_id in latest.values() if run_id}
    # A local copy: another thread clearing the shared store cannot drop a key's facts.
    found = {run_id: _facts_of_run[run_id] for run_id in wanted if run_id in _facts_of_run}
    missing = wanted - found.keys()
    if missing:
        for run in KeyCalibration.objects.filter(id__in=missing).prefetch_related("rates"):
            if len(_facts_of_run) > 10_000:  # bounded: keys are few; never grows without end
                _facts_of_run.clear()
            found[run.id] = _facts_of_run[run.id] = _facts(run)
    return {
        key_id: copy.deepcopy(found[run_id]) for key_id, run_id in latest.items() if run_id in found
    }


def _facts(run: KeyCalibration) -> CalibrationFacts:
    return calibrated_tokens_needed(run), measured_fpr(run)


def latest_calibrations(keys: Iterable[WatermarkKey]) -> dict[uuid.UUID, KeyCalibration]:
    """Each key's most recent finished calibration (keys never calibrated are absent)."""
    ids = [key.id for key in keys]
    latest: dict[uuid.UUID, KeyCalibration] = {}
    done = (
        KeyCalibration.objects.filter(key_id__in=ids, status=KeyCalibration.Status.DONE)
        .order_by("key_id", "-finished_at")
        .prefetch_related("rates")
    )
    for run in done:
        latest.setdefault(run.key_id, run)
    return latest


def open_calibrations() -> QuerySet[KeyCalibration]:
    """Calibrations queued or running and younger than the task's hard time limit plus the
    broker's slack: an older one was lost (a worker died, Redis restarted empty)."""
    open_ = [KeyCalibration.Status.PENDING, KeyCalibration.Status.RUNNING]
    since = timezone.now() - timedelta(seconds=settings.PROVENANCE_CALIBRATION_TIME_LIMIT + 300)
    return KeyCalibration.objects.filter(status__in=open_, created_at__gte=since)


def pending_calibrations(keys: Iterable[WatermarkKey]) -> set[uuid.UUID]:
    """Keys with a live calibration queued or running."""
    ids = [key.id for key in keys]
    return set(open_calibrations().filter(key_id__in=ids).values_list("key_id", flat=True))


def measured_fpr(run: KeyCalibration | None) -> dict[str, Any] | None:
    """A key's measured false-positive rate as the API and the result page name it: per
    genre the flagged share with its 95% interval and count, the threshold and the date."""
    if run is None:
        return None
    return {
        "threshold": run.threshold,
        "measured_at": run.finished_at.isoformat() if run.finished_at else None,
        "above_threshold": any(rate.above_threshold for rate in run.rates.all()),
        "genres": {
            rate.genre: {
                "rate": rate.rate,
                "ci_low": rate.ci_low,
                "ci_high": rate.ci_high,
                "texts": rate.texts,
                "flagged": rate.flagged,
                "above_threshold": rate.above_threshold,
            }
            for rate in run.rates.all()
        },
    }


def tokens_needed(key: WatermarkKey, temperature: float | None = None) -> int | None:
    """Scored tokens a watermarked text of ``key`` needs for 80% power at the calibration's
    threshold (one hypothesis), from its latest measured power curve: at ``temperature``
    (1.0 or 0.7), or the larger of the two when None. None: not measured, or not reached
    within the generated length."""
    return calibrated_tokens_needed(latest_calibrations([key]).get(key.id), temperature)


def calibrated_tokens_needed(
    run: KeyCalibration | None, temperature: float | None = None
) -> int | None:
    """``tokens_needed`` from a key's latest calibration ``run`` (None: never calibrated)."""
    if run is None:
        return None
    labels = ["1.0", "0.7"] if temperature is None else [f"{temperature:.1f}"]
    found = [run.power.get(label, {}).get("scored_tokens_needed") for label in labels]
    if not found or any(n is None for n in found):
        return None
    return max(found)


def may_calibrate(user: Any, key: WatermarkKey) -> bool:
    """An admin of the key's owning team, or a registry administrator (may change keys)."""
    if user.has_perm("keys.change_watermarkkey"):
        return True
    return Membership.objects.filter(user=user, team_id=key.team_id, is_admin=True).exists()


def key_measured_fpr(key: WatermarkKey | None) -> dict[str, Any] | None:
    """``measured_fpr`` of a key's latest calibration; None for no key or none finished."""
    return None if key is None else measured_fpr(latest_calibrations([key]).get(key.id))


GENRE_LABELS = {"prose": _("prose"), "code": _("source code"), "templated": _("templated text")}


def calibration_assisted_rates(run: KeyCalibration | None) -> list[dict[str, Any]]:
    """The model-assisted decision's per-genre rates for a page (none when not measured)."""
    genres = {} if run is None else run.assisted.get("genres", {})
    return [{"rate": r, "label": GENRE_LABELS.get(g, g)} for g, r in genres.items()]


def calibration_rates(run: KeyCalibration | None) -> list[dict[str, Any]]:
    """A calibration's per-genre rates for a page: each row with the genre's label."""
    if run is None:
        return []
    return [{"rate": r, "label": GENRE_LABELS.get(r.genre, r.genre)} for r in run.rates.all()]


def _rate_figures(genre: str, rate: Any) -> dict[str, Any]:
    """One genre's measured rate (a ``GenreRate`` row or the assisted run's dict)."""
    read = rate.get if isinstance(rate, dict) else lambda name: getattr(rate, name)
    fields = ("texts", "flagged", "rate", "ci_low", "ci_high", "above_threshold")
    return {"genre": genre, **{name: read(name) for name in fields}}


def calibration_figures(run: KeyCalibration | None) -> dict[str, Any] | None:
    """A finished calibration's figures, as the keys page draws them and the API answers
    them: per genre the realized false-positive rate with its 95% Clopper-Pearson interval
    (and the model-assisted decision's, where measured), the threshold, and per sampling
    setting the power curve (share detected by length) with the tokens for 80% power."""
    if run is None:
        return None
    assisted = run.assisted.get("genres", {})
    return {
        "id": str(run.id),
        "threshold": run.threshold,
        "measured_at": run.finished_at.isoformat() if run.finished_at else None,
        "texts_per_genre": run.texts_per_genre,
        "chunk_tokens": run.chunk_tokens,
        "rates": [_rate_figures(rate.genre, rate) for rate in run.rates.all()],
        "assisted_rates": [_rate_figures(genre, rate) for genre, rate in assisted.items()],
        "assisted_note": run.assisted.get("note", ""),
        # Hottest setting first, on every database (PostgreSQL's jsonb keeps no key order).
        "power": [
            _power_figures(label, entry)
            for label, entry in sorted(
                run.power.items(), key=lambda item: -float(item[1].get("temperature", 0.0))
            )
        ],
        "power_tokens": run.power_tokens,
        "power_note": run.power_note,
    }


def _power_figures(label: str, entry: dict[str, Any]) -> dict[str, Any]:
    points = [
        {**point, "power": point["detected"] / point["texts"] if point["texts"] else 0.0}
        for point in entry.get("points", [])
    ]
    return {
        "setting": label,
        "temperature": entry.get("temperature", float(label)),
        "top_p": entry.get("top_p"),
        "tokens_needed": entry.get("tokens_needed"),
        "scored_tokens_needed": entry.get("scored_tokens_needed"),
        "points": points,
    }


def prepare_keys(keys: list[WatermarkKey]) -> list[KeyGroup]:
    """The scoring service's input: ``keys`` grouped by tokenizer (first-seen order),
    decrypted, with what their calibrations measured."""
    by_tokenizer: dict[int, list[WatermarkKey]] = {}
    for key in keys:
        by_tokenizer.setdefault(key.tokenizer_id, []).append(key)
    facts = calibration_facts(keys)  # at most one query for every key's
    groups = []
    for members in by_tokenizer.values():
        tokenizer = members[0].tokenizer
        groups.append(
            KeyGroup(
                tokenizer=tokenizer,
                loaded=tokenizer_load(tokenizer),
                keys=tuple(members),
                configs=tuple(_scoring_config(key) for key in members),
                tokens_needed=tuple(facts.get(key.id, (None, None))[0] for key in members),
                measured_fpr=tuple(facts.get(key.id, (None, None))[1] for key in members),
            )
        )
    return groups


def _scoring_config(key: WatermarkKey) -> KeyConfig:
    try:
        return key_config(key)
    except KeyDecryptionError:
        raise ScoringError(f"key {key.name!r} does not decrypt with the configured KEK") from None
