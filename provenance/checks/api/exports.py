"""A check as a file: ``GET /api/v1/checks/<id>/export.json`` (the detail answer, hypotheses
included) or ``.csv`` (one row per hypothesis, ``provenance.checks.exports``)."""

from __future__ import annotations

import csv
import io
import json

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.utils.encoders import JSONEncoder

from provenance.accounts.auth import AuthenticatedRequest
from provenance.checks import selectors, tiers
from provenance.checks.api.base import TieredApi
from provenance.checks.api.checks import CheckDetailOutput, HypothesisOutput
from provenance.checks.exports import csv_safe, export_row, hypothesis_rows
from provenance.checks.fields import EXPORT_FIELDS, HYPOTHESIS_EXPORT
from provenance.keys.selectors import exact_for


class CheckExportApi(TieredApi):
    """One check as a file: JSON (the detail answer, hypotheses included) or CSV (one row per
    hypothesis). Pages link here; the session authenticates them."""

    @extend_schema(responses={(200, "text/csv"): str, (200, "application/json"): dict})
    def get(self, request: AuthenticatedRequest, check_id: str, fmt: str) -> HttpResponse:
        check = selectors.check_get(request.user, check_id)
        auditor = exact_for(request.user, check.key_ids)
        if fmt == "json":
            data = CheckDetailOutput(check).data
            data = data if auditor else tiers.redact(data)
            body = json.dumps(data, cls=JSONEncoder, ensure_ascii=False, indent=2)
            response = HttpResponse(body, content_type="application/json; charset=utf-8")
        else:
            out = io.StringIO()
            row = export_row(check)
            hypotheses = list(HypothesisOutput(check.hypotheses.all(), many=True).data)
            if not auditor:
                row, hypotheses = tiers.redact(row), tiers.redact(hypotheses)
            writer = csv.DictWriter(out, fieldnames=[*EXPORT_FIELDS, *HYPOTHESIS_EXPORT])
            writer.writeheader()
            writer.writerows(csv_safe(line) for line in hypothesis_rows(row, hypotheses))
            response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="check-{check.id}.{fmt}"'
        return response
