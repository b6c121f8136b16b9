"""DRF exception handler: service errors become clear 4xx answers, never stack traces."""

from __future__ import annotations

from typing import Any

from django.db import InterfaceError, OperationalError
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from provenance.errors import ProblemError
from provenance.middleware import UNAVAILABLE


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ProblemError):
        return Response({"detail": exc.message, "code": exc.code}, status=exc.status_code)
    if isinstance(exc, (OperationalError, InterfaceError)):  # database down or locked
        return Response({"detail": UNAVAILABLE}, status=503, headers={"Retry-After": "5"})
    return drf_exception_handler(exc, context)
