"""The login throttle: django-axes' standalone backend, first of the authentication backends,
with two counts of its own beside axes' pair.

The address is the client's as every counter names it (``provenance.lib.identity``: behind
the deployment's trusted proxies, the client they appended, never the proxy; an IPv6 /64 as
one).

It signs nobody in; it refuses a password sign-in at the forms (``/accounts/login/`` and
``/admin/login/``) before any password is read when:

- its username and address are locked out by axes (``AXES_*`` settings:
  ``PROVENANCE_LOGIN_FAILURES`` failures of that pair, then a lockout of
  ``PROVENANCE_LOGIN_LOCKOUT_MINUTES``; a successful sign-in clears the pair's count);
- its address failed ``PROVENANCE_LOGIN_ADDRESS_FAILURES`` sign-ins, whatever the usernames,
  within ``PROVENANCE_LOGIN_LOCKOUT_MINUTES`` of the first (one password sprayed over many
  usernames);
- its username failed ``PROVENANCE_LOGIN_USERNAME_FAILURES`` sign-ins, whatever the
  addresses, in the same window (one account guessed from many addresses). This one can be
  used to keep a user out for the window: its limit is set well above the pair's.

The two counts live in the cache (Redis when ``PROVENANCE_CACHE_URL`` is set: one count for
every web process), from Django's ``user_login_failed`` signal, as axes counts; a success does
not clear them (a sprayer holding one valid account could otherwise reset its address's
count). A locked-out attempt is answered with axes' 429 page (``axes.middleware``).
"""

from __future__ import annotations

import hashlib
from typing import Any

from axes.backends import AxesStandaloneBackend
from axes.exceptions import AxesBackendPermissionDenied
from django.conf import settings
from django.contrib.auth.signals import user_login_failed
from django.core.cache import cache
from django.dispatch import receiver
from django.http import HttpRequest

from provenance.lib.identity import client_scope

_PREFIX = "login-failures:"


def _counts(request: HttpRequest, username: str) -> list[tuple[str, int]]:
    """(cache key, limit) of the address's and the username's failure counts."""
    address = client_scope(request) or "unknown"  # the one identity (behind the proxies)
    # Hashed: a cache key of bounded length and characters, whatever was typed.
    name = hashlib.sha256(username.casefold().encode("utf-8", "replace")).hexdigest()
    return [
        (f"{_PREFIX}address:{address}", settings.PROVENANCE_LOGIN_ADDRESS_FAILURES),
        (f"{_PREFIX}username:{name}", settings.PROVENANCE_LOGIN_USERNAME_FAILURES),
    ]


def login_failure_record(request: HttpRequest, username: str) -> None:
    """Count one failed password sign-in against its address and its username; each count
    lives for the lockout's length from its first failure."""
    window = int(settings.AXES_COOLOFF_TIME.total_seconds())
    for key, _ in _counts(request, username):
        if cache.add(key, 1, window):
            continue
        try:
            cache.incr(key)
        except ValueError:  # expired between the two calls
            cache.add(key, 1, window)


def login_spread_locked(request: HttpRequest, username: str) -> bool:
    """Whether the address or the username has failed too often across the other one."""
    values = cache.get_many([key for key, _ in _counts(request, username)])
    return any(int(values.get(key) or 0) >= limit for key, limit in _counts(request, username))


@receiver(user_login_failed, dispatch_uid="provenance-login-spread")
def _login_failed(sender: Any, credentials: dict, request: Any = None, **kwargs: Any) -> None:
    username = credentials.get("username")
    if isinstance(request, HttpRequest) and isinstance(username, str):
        login_failure_record(request, username)


class LoginThrottleBackend(AxesStandaloneBackend):
    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> None:
        """Refuse a locked-out password sign-in. A call with no request (a management
        command, the test client's ``login``) comes from no address and is not a sign-in over
        HTTP, and one with no username (the organization sign-in's callback: the provider
        checked the password) has no pair to count: both are left to the other backends."""
        if request is None or username is None:
            return None
        if login_spread_locked(request, username):
            request.axes_locked_out = True  # type: ignore[attr-defined]  # axes' 429 page
            raise AxesBackendPermissionDenied("too many failed sign-ins")
        return super().authenticate(request, username, password, **kwargs)
