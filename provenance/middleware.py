"""Cross-cutting HTTP behaviour: the client's address for the access log, the content
security policy, and a clear 503 when the database cannot be reached or stays locked (instead
of a 500 and a stack trace)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import translation

from provenance.lib.identity import ENVIRON_KEY, client_address

logger = logging.getLogger(__name__)

UNAVAILABLE = "the database is unavailable or busy; nothing was stored, try again shortly"


class ClientAddressMiddleware:
    """The client's address (``provenance.lib.identity.client_address``: behind the trusted
    proxies, the hop they appended) into the WSGI environ, where gunicorn's access log
    (``ACCESS_LOG_FORMAT``) prints it instead of the proxy's."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.META[ENVIRON_KEY] = client_address(request) or "-"
        return self.get_response(request)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", settings.CONTENT_SECURITY_POLICY)
        return response


class DatabaseUnavailableMiddleware:
    """OperationalError/InterfaceError reaching the top: the database is down or locked.
    Every write is in a transaction that was rolled back, so nothing half-stored remains."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        # The atomic blocks the error crossed have rolled back already.
        if not isinstance(exc, (OperationalError, InterfaceError)):
            return None
        logger.warning(
            "database unavailable on %s %s: %s", request.method, request.path, type(exc).__name__
        )
        return unavailable_response(request)


def unavailable_response(request: HttpRequest) -> HttpResponse:
    if request.path.startswith(("/api/", "/detect")):
        response: HttpResponse = JsonResponse({"detail": UNAVAILABLE}, status=503)
    else:
        response = HttpResponse(
            f"<!doctype html><title>Unavailable</title><h1>Service unavailable</h1>"
            f"<p>{UNAVAILABLE.capitalize()}.</p>",
            status=503,
        )
    response["Retry-After"] = "5"
    return response


class ApiInEnglishMiddleware:
    """API answers (and their error messages) are English whatever Accept-Language or the
    language cookie asks: clients match on stable codes, people read English docs. Runs after
    LocaleMiddleware, which picked the page language."""

    API_PREFIXES = ("/api/", "/detect", "/.well-known/")

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(self.API_PREFIXES):
            translation.activate("en")
            request.LANGUAGE_CODE = "en"
        return self.get_response(request)
