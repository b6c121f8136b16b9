"""Reads about teams."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, cast

from django.contrib.auth.models import AnonymousUser, User

from provenance.accounts.models import Membership, Team

_teams: ContextVar[dict[int, Team | None] | None] = ContextVar("provenance_teams", default=None)


@contextmanager
def teams_memoized() -> Iterator[None]:
    """Within the block (one API request: its service, its selector and the tier check each
    ask), ``team_for_user`` reads each user's team from the database once."""
    token = _teams.set({})
    try:
        yield
    finally:
        _teams.reset(token)


def team_for_user(user: User | AnonymousUser) -> Team | None:
    if isinstance(user, AnonymousUser):
        return None
    memo = _teams.get()
    if memo is not None and user.pk in memo:
        return memo[user.pk]
    membership_of = User.membership.related  # type: ignore[attr-defined]
    if membership_of.is_cached(user):  # read with the user (provenance.accounts.auth's token query)
        cached = cast("Membership | None", membership_of.get_cached_value(user))
        return cached.team if cached is not None else None
    membership = Membership.objects.select_related("team").filter(user=user).first()
    team = membership.team if membership else None
    if memo is not None:
        memo[user.pk] = team
    return team


def oracle_tier(user: User | AnonymousUser) -> str:
    """The caller's team's tier; no team: basic (the least the detector reveals)."""
    team = team_for_user(user)
    return team.oracle_tier if team is not None else Team.OracleTier.BASIC


def is_auditor(user: User | AnonymousUser) -> bool:
    return oracle_tier(user) == Team.OracleTier.AUDITOR


def api_token_current(user: User) -> Any:
    """The user's newest unexpired API token row (its prefix and expiry; the token itself is
    not stored), or None."""
    from django.db.models import Q
    from django.utils import timezone
    from knox.models import get_token_model

    unexpired = Q(expiry__isnull=True) | Q(expiry__gt=timezone.now())
    return get_token_model().objects.filter(unexpired, user=user).order_by("-created").first()


def is_team_admin(user: User | AnonymousUser | None) -> bool:
    """Whether the user administers their team (deletes any of its checks, filters the
    history by submitter)."""
    if user is None or not user.is_authenticated:
        return False
    return Membership.objects.filter(user=user, is_admin=True).exists()
