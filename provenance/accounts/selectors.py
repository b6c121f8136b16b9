"""Reads about teams."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from provenance.accounts.models import Membership, Team


def team_for_user(user: AbstractBaseUser | AnonymousUser) -> Team | None:
    if not user.is_authenticated:
        return None
    membership = Membership.objects.select_related("team").filter(user=user).first()
    return membership.team if membership else None
