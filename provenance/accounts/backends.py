"""The login throttle: django-axes' standalone backend, first of the authentication backends.

It signs nobody in; it refuses a sign-in whose username and address are locked out
(``AXES_*`` settings: ``PROVENANCE_LOGIN_FAILURES`` failures, then a lockout of
``PROVENANCE_LOGIN_LOCKOUT_MINUTES``) at the password sign-in forms (``/accounts/login/``
and ``/admin/login/``). Axes counts the failures from Django's ``user_login_failed`` signal
and answers a locked-out attempt with its 429 page (``axes.middleware.AxesMiddleware``).
"""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from django.http import HttpRequest


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
        return super().authenticate(request, username, password, **kwargs)
