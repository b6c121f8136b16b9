"""Counts the answers of the routes that store no check row (public verification, streams)
for ``/metrics``, from what the view answered: the route's name, the status and the answer's
``verdict``, token count or refusal ``code``. Nothing of the request is read or kept."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse

from provenance.metrics import services

PUBLIC_VERIFY = "public-verify-api"
STREAM_CREATE = "api-streams"
STREAM_APPEND = "api-stream-append"


class MetricsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.monotonic()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        if match is not None and request.method == "POST":
            data = getattr(response, "data", None)
            if isinstance(data, dict):
                count(match.url_name or "", response.status_code, data, started)
        return response


def count(route: str, status: int, data: dict[str, Any], started: float) -> None:
    """Count one answer of ``route`` (a URL name) with ``status`` and body ``data``."""
    if route == PUBLIC_VERIFY:
        if status == 200:
            services.sync_submitted_count("public")
            services.sync_finished_count(
                "public",
                str(data.get("verdict", "")),
                _int(data.get("tokens_scored")),
                time.monotonic() - started,
            )
        elif status >= 400:
            services.public_refusal_count(str(data.get("code", "")))
    elif route == STREAM_CREATE and status == 201:
        services.sync_submitted_count("stream")
    elif route == STREAM_APPEND and status == 200 and data.get("closed") and "verdict" in data:
        services.sync_finished_count(
            "stream", str(data["verdict"]), _int(data.get("num_scored_tokens")), None
        )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
