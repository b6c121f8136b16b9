"""Pages of audits: the team's audits, one audit's results, deleting one. Thin: parse, call one
service or selector, render."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import redirect, render

from provenance.audits import selectors
from provenance.auth import AuthenticatedHttpRequest
from provenance.checks.selectors import may_delete
from provenance.checks.views import tiered
from provenance.retention import services as retention


@login_required
def audit_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    page = Paginator(selectors.audits_for_user(request.user), 50).get_page(request.GET.get("page"))
    return render(request, "audits/audit_list.html", {"page": page})


@login_required
def audit_detail(request: AuthenticatedHttpRequest, audit_id: uuid.UUID) -> HttpResponse:
    audit = selectors.audit_get(request.user, audit_id)
    page = Paginator(selectors.audit_items(audit), 100).get_page(request.GET.get("page"))
    tiered(request, page)
    context = {
        "audit": audit,
        "counts": selectors.audit_counts(audit),
        "page": page,
        "may_delete": may_delete(request.user, audit),
    }
    return render(request, "audits/audit_detail.html", context)


@login_required
def audit_delete(request: AuthenticatedHttpRequest, audit_id: uuid.UUID) -> HttpResponse:
    """GET asks for confirmation (works without JavaScript); POST deletes the audit and
    purges all its texts."""
    audit = selectors.audit_get(request.user, audit_id)
    if not may_delete(request.user, audit):
        raise PermissionDenied("only the submitter or a team admin may delete this audit")
    if request.method == "POST":
        retention.audit_delete(user=request.user, audit_id=audit.id)
        return redirect("audit-list")
    return render(request, "audits/audit_delete.html", {"audit": audit})
