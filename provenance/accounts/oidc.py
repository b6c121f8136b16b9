"""Organization sign-in over OpenID Connect (mozilla-django-oidc's code flow).

Configured by ``PROVENANCE_OIDC_*`` variables (``provenance/settings.py``); off unless
``PROVENANCE_OIDC_CLIENT_ID`` is set, and local accounts keep working beside it. A user is
known by the provider's ``sub`` (``ExternalIdentity``), never by an e-mail address, so an
identity provider account cannot take over a local account that happens to share one. The
group claim decides everything else at every sign-in: the team (a group without a team is
refused), team admin, and the playground permission.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from provenance.accounts.models import ExternalIdentity
from provenance.accounts.services import (
    identity_signed_in,
    user_credentials_revoke,
    user_sync_from_groups,
)

logger = logging.getLogger(__name__)


def claim_groups(claims: dict[str, Any]) -> list[str]:
    """The configured group claim as a list (providers send a list or one string)."""
    value = claims.get(settings.PROVENANCE_OIDC["GROUP_CLAIM"]) or []
    return [value] if isinstance(value, str) else [str(group) for group in value]


def team_name_for(groups: list[str]) -> str | None:
    """The team of the first group (in configuration order) the user belongs to."""
    for group, team in settings.PROVENANCE_OIDC["TEAMS"].items():
        if group in groups:
            return team
    return None


class OrganizationBackend(OIDCAuthenticationBackend):
    _refresh_token: str | None = None  # this sign-in's, kept by get_token

    def get_token(self, payload: dict[str, Any]) -> Any:
        """The code exchange's answer; its refresh token is kept for the user (under the KEK)
        so the provider can be asked later whether it still knows them."""
        token_info = super().get_token(payload)
        refresh = token_info.get("refresh_token") if isinstance(token_info, dict) else None
        self._refresh_token = refresh if isinstance(refresh, str) and refresh else None
        return token_info

    def get_user(self, user_id: Any) -> Any:
        """The session's user, read on every request; a deactivated one is signed out at
        once (mozilla-django-oidc's own ``get_user`` does not look at ``is_active``)."""
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        if not claims.get("sub"):
            return False
        if team_name_for(claim_groups(claims)) is None:
            # No user name or group list in the log: the provider may hold them secret.
            logger.warning("organization sign-in refused: no group of the user maps to a team")
            # A known user taken out of every mapped group (a sign-in, or the session's
            # silent refresh) is deprovisioned: every session and API token goes at once.
            for user in self.filter_users_by_claims(claims):
                user_credentials_revoke(user=user)
            return False
        return True

    def filter_users_by_claims(self, claims: dict[str, Any]) -> QuerySet[Any]:
        return get_user_model().objects.filter(external_identity__subject=claims["sub"])

    @transaction.atomic
    def create_user(self, claims: dict[str, Any]) -> User:
        users: Any = get_user_model().objects
        user = users.create_user(_free_username(claims), email=claims.get("email", ""))
        user.set_unusable_password()  # signs in through the provider only
        user.save(update_fields=["password"])
        ExternalIdentity.objects.create(user=user, subject=claims["sub"])
        return self.update_user(user, claims)

    def update_user(self, user: User, claims: dict[str, Any]) -> User:
        """The groups of this moment applied (every sign-in and every confirmation), and at a
        sign-in the refresh token it brought kept."""
        self.apply_groups(user, claims)
        if getattr(self, "request", None) is not None:  # a sign-in, not a confirmation
            identity_signed_in(subject=claims["sub"], refresh_token=self._refresh_token)
        return user

    def apply_groups(self, user: User, claims: dict[str, Any]) -> None:
        groups = claim_groups(claims)
        team = team_name_for(groups)
        assert team is not None  # verify_claims refused the sign-in otherwise
        config = settings.PROVENANCE_OIDC
        user_sync_from_groups(
            user=user,
            team_name=team,
            is_admin=bool(set(groups) & set(config["ADMIN_GROUPS"])),
            playground=bool(set(groups) & set(config["PLAYGROUND_GROUPS"])),
        )


def _free_username(claims: dict[str, Any]) -> str:
    """preferred_username (or the e-mail's local part), made unique with a digest of sub."""
    raw = claims.get("preferred_username") or str(claims.get("email", "")).split("@")[0]
    base = re.sub(r"[^\w.@+-]", "", raw)[:100] or "user"
    if not get_user_model().objects.filter(username=base).exists():
        return base
    return f"{base}-{hashlib.sha256(claims['sub'].encode()).hexdigest()[:8]}"


def _when_enabled(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not settings.PROVENANCE_OIDC["ENABLED"]:
            raise Http404("organization sign-in is not configured")
        return view(request, *args, **kwargs)

    return wrapped


authenticate_view = _when_enabled(OIDCAuthenticationRequestView.as_view())
callback_view = _when_enabled(OIDCAuthenticationCallbackView.as_view())
