"""Types for views that only signed-in users reach.

Behind ``login_required`` (pages) or DRF's default ``IsAuthenticated`` (the API) a request's
``user`` is an account, never ``AnonymousUser``; these request types say so to the type
checker (the pattern django-stubs documents for ``request.user``). Where no such guarantee
is visible in a signature (the admin's hooks), ``signed_in`` checks it at run time.
"""

from __future__ import annotations

import copy
import time
from typing import Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object
from knox import auth as knox_auth
from knox.crypto import hash_token
from knox.models import get_token_model
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from provenance.lib import rowcache


class AuthenticatedHttpRequest(HttpRequest):
    user: User


class AuthenticatedRequest(Request):
    user: User


def signed_in(user: AbstractBaseUser | AnonymousUser) -> User:
    """The account making a request that must be signed in (403 otherwise)."""
    if not isinstance(user, User):
        raise PermissionDenied("sign in first")
    return user


class TokenAuthentication(knox_auth.TokenAuthentication):
    """django-rest-knox's token authentication (``Authorization: Token <token>``), reading
    the token, its user and the user's team in one statement: the token's SHA-512 digest is
    the row's primary key, and ``select_related`` follows the one-to-one membership
    (``team_for_user`` then needs none). The statement goes through the per-process row
    cache (``provenance.lib.rowcache``): its SQL is compiled once per token, and the objects
    are built by the ORM only when the row read differs from the one they were built from
    (building them cost an API request more CPU than scoring a short text). Every request
    still reads the row, so a revoked or expired token, or a user made inactive or moved to
    another team, or a team whose tier changed, is refused or re-scoped on the next request.
    Each request gets its own copies of the token and user, never the process's shared
    ones. An expired token is deleted when it is presented."""

    def authenticate_credentials(self, token: bytes) -> tuple[User, Any]:
        model: Any = get_token_model()
        try:
            digest = hash_token(token.decode())
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed(_("Invalid token.")) from None
        rows = rowcache.validated(
            ("api_token", digest),
            lambda: model.objects.select_related("user__membership__team").filter(digest=digest),
        )
        if not rows:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        found = _private_copy(rows[0])
        if found.expiry is not None and found.expiry <= timezone.now():
            found.delete()
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if not found.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return (found.user, found)


def _private_copy(shared: Any) -> Any:
    """The token row with its user, membership and team copied: the request may change
    them (a token's ``delete`` clears its key) without touching the process's cached ones."""
    token, user = _clone(shared), _clone(shared.user)
    token.user = user
    membership = User.membership.related  # type: ignore[attr-defined]
    if membership.is_cached(shared.user):
        member = membership.get_cached_value(shared.user)
        if member is not None:
            member = _clone(member)
            member.user = user
            member.team = _clone(member.team)
        membership.set_cached_value(user, member)
    return token


def _clone(obj: Any) -> Any:
    """A shallow copy of a model instance with its own state and relation cache (what
    ``copy.copy`` gives through pickling's protocol, without its detour)."""
    clone = obj.__class__.__new__(obj.__class__)
    clone.__dict__.update(obj.__dict__)
    clone._state = copy.copy(obj._state)
    clone._state.fields_cache = dict(obj._state.fields_cache)
    return clone


class SessionAuthentication(authentication.SessionAuthentication):
    """DRF's session authentication (the pages' own calls to ``/api/``), with one more rule
    for an organization user whose provider gave no refresh token: the sweeper cannot ask the
    provider about them between sign-ins (``accounts.identities``), and ``/api/`` is exempt
    from the pages' silent session renewal (``SessionRefresh``, which signs out a user the
    provider no longer knows). Their session is accepted on ``/api/`` only while the
    provider's last confirmation of it is fresh (``oidc_id_token_expiration``, every
    ``PROVENANCE_OIDC_RENEW_SECONDS``); opening a page renews it, or signs them out."""

    def authenticate(self, request: Request) -> tuple[Any, None] | None:
        found = super().authenticate(request)
        if found is None:
            return None
        if not session_confirmed(request._request, found[0]):
            raise exceptions.AuthenticationFailed(
                _("your organization sign-in must be renewed: open a page of the site first")
            )
        return found


def session_confirmed(request: HttpRequest, user: Any) -> bool:
    """Whether a session may be used on ``/api/``: a local user's always; an organization
    user's while a refresh token is kept for them (the sweeper asks the provider), else only
    until the session's ID token is due for renewal."""
    from provenance.accounts.models import ExternalIdentity

    unconfirmable = ExternalIdentity.objects.filter(
        user_id=user.pk, encrypted_refresh_token__isnull=True
    )
    if not unconfirmable.exists():
        return True
    expiration = request.session.get("oidc_id_token_expiration", 0)
    return isinstance(expiration, int | float) and expiration > time.time()


class TokenScheme(OpenApiAuthenticationExtension):
    """The API schema's description of the token header (``Authorization: Token <token>``),
    under the name DRF's token authentication had."""

    target_class = "provenance.accounts.auth.TokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return build_bearer_security_scheme_object(
            header_name="Authorization", token_prefix="Token"
        )


class SessionScheme(OpenApiAuthenticationExtension):
    """The API schema's description of the session cookie, under the name drf-spectacular
    gives DRF's own session authentication."""

    target_class = "provenance.accounts.auth.SessionAuthentication"
    name = "cookieAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {"type": "apiKey", "in": "cookie", "name": settings.SESSION_COOKIE_NAME}
