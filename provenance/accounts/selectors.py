"""Reads about teams."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User

from provenance.accounts.models import Membership, Team


def team_for_user(user: User | AnonymousUser) -> Team | None:
    if isinstance(user, AnonymousUser):
        return None
    membership = Membership.objects.select_related("team").filter(user=user).first()
    return membership.team if membership else None


def oracle_tier(user: User | AnonymousUser) -> str:
    """The caller's team's tier; no team: basic (the least the detector reveals)."""
    team = team_for_user(user)
    return team.oracle_tier if team is not None else Team.OracleTier.BASIC


def is_auditor(user: User | AnonymousUser) -> bool:
    return oracle_tier(user) == Team.OracleTier.AUDITOR
