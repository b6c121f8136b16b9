"""Reads about teams."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User

from provenance.accounts.models import Membership, Team


def team_for_user(user: User | AnonymousUser) -> Team | None:
    if isinstance(user, AnonymousUser):
        return None
    membership = Membership.objects.select_related("team").filter(user=user).first()
    return membership.team if membership else None
