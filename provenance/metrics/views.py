"""``GET /metrics``: Prometheus' text format, for the operator's scraper only.

Off (404) unless PROVENANCE_METRICS_TOKEN is set; then answered only to
``Authorization: Bearer <that token>`` (compared in constant time). A missing or wrong token
is answered 404 as well, exactly as when the endpoint is off: a stranger cannot even tell it
exists. The answer holds figures and bounded labels only (no key, user, team or text)."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from provenance.metrics.collector import exposition


def authorized(request: HttpRequest) -> bool:
    """Whether the request carries the configured token (False when none is configured)."""
    token = settings.PROVENANCE_METRICS_TOKEN
    if not token:
        return False
    scheme, _, given = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())


@never_cache
@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    if not authorized(request):
        raise Http404()
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
