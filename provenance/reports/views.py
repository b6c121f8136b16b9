"""The printable report page: the same signed payload, laid out for reading and printing."""

from __future__ import annotations

import json
import uuid

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render

from detector.reports.signed import verify
from provenance.accounts.auth import AuthenticatedHttpRequest
from provenance.checks import selectors as check_selectors
from provenance.errors import ProblemError
from provenance.reports import selectors, services


@login_required
def report_page(request: AuthenticatedHttpRequest, check_id: uuid.UUID) -> HttpResponse:
    check = check_selectors.check_get(request.user, check_id)
    try:
        token = services.report_sign(check, selectors.report_tier(request.user, check))
    except ProblemError as exc:
        return render(
            request,
            "reports/report.html",
            {"check": check, "error": exc.message},
            status=exc.status_code,
        )
    verified = verify(token, selectors.jwks())  # the page shows exactly what was signed
    context = {
        "check": check,
        "token": token,
        "kid": verified.kid,
        "payload": verified.payload,
        "payload_json": json.dumps(verified.payload, indent=2, sort_keys=True),
    }
    return render(request, "reports/report.html", context)
