"""Types for views that only signed-in users reach.

Behind ``login_required`` (pages) or DRF's default ``IsAuthenticated`` (the API) a request's
``user`` is an account, never ``AnonymousUser``; these request types say so to the type
checker (the pattern django-stubs documents for ``request.user``). Where no such guarantee
is visible in a signature (the admin's hooks), ``signed_in`` checks it at run time.
"""

from __future__ import annotations

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
    the token, its user and the user's team in one query: the token's SHA-512 digest is the
    row's primary key, and ``select_related`` follows the one-to-one membership
    (``team_for_user`` then needs none); each query costs an API request about as much CPU as
    scoring a short text. Every request still reads the token, so a revoked or expired token,
    or a user made inactive or moved to another team, is refused or re-scoped on the next
    request. An expired token is deleted when it is presented."""

    def authenticate_credentials(self, token: bytes) -> tuple[User, Any]:
        model: Any = get_token_model()
        try:
            digest = hash_token(token.decode())
            found = model.objects.select_related("user__membership__team").get(digest=digest)
        except (UnicodeDecodeError, model.DoesNotExist):
            raise exceptions.AuthenticationFailed(_("Invalid token.")) from None
        if found.expiry is not None and found.expiry <= timezone.now():
            found.delete()
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if not found.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return (found.user, found)


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
