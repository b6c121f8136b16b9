"""Signed reports over HTTP: ``GET /api/v1/checks/{id}/report`` (application/jose) and the
public key set at ``/.well-known/jwks.json``."""

from __future__ import annotations

import uuid

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.views import APIView

from detector.reports.signed import MEDIA_TYPE
from provenance.accounts.auth import AuthenticatedRequest
from provenance.checks import selectors as check_selectors
from provenance.reports import selectors, services


class CheckReportApi(APIView):
    """The report of a check or an audit item (audit items are checks with their own ids)."""

    @extend_schema(
        responses={(200, MEDIA_TYPE): OpenApiResponse(description="compact JWS (Ed25519)")}
    )
    def get(self, request: AuthenticatedRequest, check_id: uuid.UUID) -> HttpResponse:
        check = check_selectors.check_get(request.user, check_id)
        token = services.report_sign(check, selectors.report_tier(request.user, check))
        response = HttpResponse(token, content_type=MEDIA_TYPE)
        response["Content-Disposition"] = f'attachment; filename="report-{check.id}.jws"'
        return response


@require_GET
def jwks_view(request: HttpRequest) -> JsonResponse:
    """Public: anyone may verify a report without an account."""
    services.signing_key_active()  # the key set is never empty
    response = JsonResponse(selectors.jwks())
    response["Cache-Control"] = "public, max-age=300"
    return response
