"""DRF exception handler: service errors become clear 4xx answers, never stack traces.

Every error answer is English (the API ignores the page language) and carries a stable
``code`` beside ``detail``: the service's code, DRF's own (``not_authenticated``,
``not_found``, ``throttled``...), or ``invalid`` for a body that failed validation (whose
per-field messages stay as DRF gives them)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import InterfaceError, OperationalError
from django.http import Http404
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from provenance.errors import ProblemError
from provenance.middleware import UNAVAILABLE


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ProblemError):
        return Response({"detail": exc.message, "code": exc.code}, status=exc.status_code)
    if isinstance(exc, (OperationalError, InterfaceError)):  # database down or locked
        body = {"detail": UNAVAILABLE, "code": "unavailable"}
        return Response(body, status=503, headers={"Retry-After": "5"})
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(response.data, dict):
        response.data.setdefault("code", _code(exc))
    return response


def _code(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "invalid"
    if isinstance(exc, APIException):
        codes = exc.get_codes()
        return codes if isinstance(codes, str) else str(exc.default_code)
    if isinstance(exc, Http404):
        return "not_found"
    if isinstance(exc, PermissionDenied):
        return "permission_denied"
    return "error"
