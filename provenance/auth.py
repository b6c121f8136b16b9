"""Types for views that only signed-in users reach.

Behind ``login_required`` (pages) or DRF's default ``IsAuthenticated`` (the API) a request's
``user`` is an account, never ``AnonymousUser``; these request types say so to the type
checker (the pattern django-stubs documents for ``request.user``). Where no such guarantee
is visible in a signature (the admin's hooks), ``signed_in`` checks it at run time.
"""

from __future__ import annotations

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
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
