"""Writes about teams and users."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import SESSION_KEY, get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from knox.models import get_token_model

from provenance.accounts.models import ExternalIdentity, Membership, Team
from provenance.lib.crypto import encrypt_bytes


def team_create(*, name: str, oracle_tier: str = Team.OracleTier.BASIC) -> Team:
    """A new team starts at the basic tier (verdicts and coarse p-values); a registry
    administrator raises a team that needs per-token data to the auditor tier."""
    return Team.objects.create(name=name, oracle_tier=oracle_tier)


@transaction.atomic
def user_create(*, username: str, password: str, team: Team | None = None, **extra) -> User:
    user = get_user_model().objects.create_user(username=username, password=password, **extra)
    if team is not None:
        Membership.objects.create(user=user, team=team)
    return user


def membership_set(*, user: User, team: Team) -> Membership:
    membership, _ = Membership.objects.update_or_create(user=user, defaults={"team": team})
    return membership


@transaction.atomic
def user_sync_from_groups(*, user: User, team_name: str, is_admin: bool, playground: bool) -> None:
    """Apply what an organization sign-in's groups say: the team (created on first use),
    team admin, and the playground permission (granted or taken away)."""
    from django.contrib.auth.models import Permission

    team = Team.objects.filter(name=team_name).first() or team_create(name=team_name)
    Membership.objects.update_or_create(user=user, defaults={"team": team, "is_admin": is_admin})
    permission = Permission.objects.get(
        content_type__app_label="playground", codename="use_playground"
    )
    if playground:
        user.user_permissions.add(permission)
    else:
        user.user_permissions.remove(permission)


@transaction.atomic
def api_token_rotate(*, user: User) -> tuple[Any, str]:
    """Replace the user's API tokens with a new one: its row (a digest, a prefix, the expiry)
    and the token itself, to show once; only the digest is stored."""
    api_token_revoke(user=user)
    return get_token_model().objects.create(user=user)


def api_token_revoke(*, user: User) -> int:
    """Revoke every API token of the user; the number revoked."""
    deleted, _ = get_token_model().objects.filter(user=user).delete()
    return deleted


@transaction.atomic
def user_credentials_revoke(*, user: User) -> None:
    """Sign the user out everywhere: every API token and every session (a deactivated or
    deprovisioned user must not come back with an old one if reactivated)."""
    from django.contrib.sessions.models import Session

    api_token_revoke(user=user)
    mine = [
        session.session_key
        for session in Session.objects.all().iterator()
        if str(session.get_decoded().get(SESSION_KEY)) == str(user.pk)
    ]
    Session.objects.filter(session_key__in=mine).delete()


def identity_signed_in(*, subject: str, refresh_token: str | None) -> None:
    """An organization sign-in of ``subject``: its refresh token kept under the KEK when the
    provider gave one (a sign-in without one keeps the token stored before, so the user is
    still asked about between sign-ins), the identity confirmed now."""
    now = timezone.now()
    fields: dict[str, Any] = {"checked_at": now, "confirmed_at": now}
    if refresh_token is not None:
        fields["encrypted_refresh_token"] = encrypt_bytes(refresh_token.encode())
    ExternalIdentity.objects.filter(subject=subject).update(**fields)
