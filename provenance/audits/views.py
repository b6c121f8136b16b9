"""Pages of audits: the team's audits and the upload form, one audit's progress and results,
its progress as JSON for the page's script, deleting one. Thin: parse, call one service or
selector, render."""

from __future__ import annotations

import uuid
from typing import Any, cast

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, TooManyFilesSent
from django.core.paginator import Paginator
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.formats import number_format
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from rest_framework.request import Request

from provenance.accounts.auth import AuthenticatedHttpRequest
from provenance.accounts.selectors import team_for_user
from provenance.audits import extraction, selectors, uploads
from provenance.audits import services as audit_services
from provenance.checks import tiers
from provenance.checks.models import Status
from provenance.checks.selectors import may_delete
from provenance.checks.views import DOCUMENT_MESSAGES
from provenance.errors import PayloadTooLarge, ProblemError
from provenance.keys.selectors import exact_for, keys_visible_to
from provenance.lib.histogram import histogram
from provenance.throttling import DetectionThrottle

RESULTS_PER_PAGE = 100

# Refusals of the upload form in the page's language (the paste form's, and a batch's own).
UPLOAD_MESSAGES = {
    **DOCUMENT_MESSAGES,
    "document_too_many_files": _("%(file)s: more documents than an audit may hold"),
    "document_no_text_column": _("%(file)s: the CSV file has no column “%(column)s”"),
    "document_no_id_column": _("%(file)s: the CSV file has no column “%(column)s”"),
    "document_empty_text": _("%(file)s: row %(row)s has no text"),
}


def _upload_message(problem: ProblemError) -> str:
    template = UPLOAD_MESSAGES.get(problem.code)
    if template is None or not getattr(problem, "filename", ""):
        return problem.message
    values = {name: getattr(problem, name, "") for name in ("column", "row")}
    return str(template) % {"file": getattr(problem, "filename", ""), **values}


@login_required
def audit_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The team's audits, and the form that uploads a new one (POST)."""
    context: dict[str, Any] = {"keys": keys_visible_to(team_for_user(request.user))}
    if request.method == "POST":
        try:
            audit = _audit_from_form(request)
        except ProblemError as exc:
            problems = getattr(exc, "problems", [exc])
            context["errors"] = [_upload_message(p) for p in problems]
            if not _oversized(request):  # an oversized body stays unread
                context["form"] = request.POST
                context["chosen"] = request.POST.getlist("key_ids")
            return _audit_list_page(request, context, status=exc.status_code)
        return redirect("audit-detail", audit_id=audit.id)
    return _audit_list_page(request, context)


def _audit_list_page(
    request: AuthenticatedHttpRequest, context: dict[str, Any], status: int = 200
) -> HttpResponse:
    audits = selectors.audits_for_user(request.user)
    context["page"] = Paginator(audits, 50).get_page(request.GET.get("page"))
    context["max_texts"] = settings.PROVENANCE_MAX_AUDIT_TEXTS
    return render(request, "audits/audit_list.html", context, status=status)


def _length(request: AuthenticatedHttpRequest) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def _oversized(request: AuthenticatedHttpRequest) -> bool:
    return _length(request) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def _audit_from_form(request: AuthenticatedHttpRequest) -> Any:
    """The upload form's files as an audit, through the API's limits and services: the body
    is refused before it is read when larger than the API would take."""
    if _oversized(request):
        message = gettext("the upload is %(size)s bytes; the limit is %(limit)s bytes")
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raise PayloadTooLarge(message % {"size": _length(request), "limit": limit})
    if not DetectionThrottle().allow_request(cast(Request, request), None):
        message = gettext("too many checks in a short time; try again in a minute")
        raise ProblemError(message, status_code=429, code="throttled")
    try:
        chosen = request.FILES.getlist("files")
    except TooManyFilesSent:
        raise uploads.too_many_files(settings.DATA_UPLOAD_MAX_NUMBER_FILES) from None
    files = [(upload.name or "document", upload.read()) for upload in chosen]
    # Staged for a worker to read: the audit's page shows its progress, or every refused
    # file (``_refusals``), in the page's language.
    audit, _created = extraction.audit_upload_submit(
        user=request.user,
        files=files,
        key_ids=request.POST.getlist("key_ids") or None,  # none chosen: every usable key
        text_column=request.POST.get("text_column", "").strip(),
        id_column=request.POST.get("id_column", "").strip(),
    )
    return audit


def _refusals(audit: Any) -> list[str]:
    """Why the workers refused an audit's files, one line per file as the upload form says
    it (``UPLOAD_MESSAGES``)."""
    lines = []
    for item in audit.refusals or []:
        problem = ProblemError(item.get("message", ""), code=item.get("code", ""))
        for name in ("filename", "column", "row"):
            setattr(problem, name, item.get(name, ""))
        lines.append(_upload_message(problem))
    return lines or ([audit.failure_reason] if audit.failure_reason else [])


@login_required
def audit_detail(request: AuthenticatedHttpRequest, audit_id: uuid.UUID) -> HttpResponse:
    """The audit's progress while it runs, then its summary and its results, filtered and
    sorted by query parameters (``?verdict=watermarked&sort=p_value``)."""
    audit = selectors.audit_get(request.user, audit_id)
    verdict, sort = selectors.results_query(request.GET)
    items = selectors.audit_items(audit, verdict, sort).only(*selectors.TABLE_COLUMNS)
    page = Paginator(items, RESULTS_PER_PAGE).get_page(request.GET.get("page"))
    exact = exact_for(request.user, audit.key_ids)
    log10_ps = selectors.audit_log10_ps(audit)
    if not exact:  # a key of another team: p-values to their power of ten, as the API
        page.object_list = _rounded(page.object_list)
        log10_ps = [float(tiers.round_log10(lp) or 0.0) for lp in log10_ps]
    progress = selectors.audit_progress(audit)
    context = {
        "audit": audit,
        "counts": progress["counts"],
        "progress": progress,
        "progress_text": _progress_texts(progress),
        "page": page,
        "verdict": verdict,
        "sort": sort,
        "query": _query(verdict, sort),
        "verdicts": VERDICT_LABELS,
        "sorts": SORT_LABELS,
        "columns": _columns(verdict, sort),
        "chart": histogram(log10_ps, audit.threshold),
        "may_delete": may_delete(request.user, audit),
        "reading": audit.status == Status.PENDING and not audit.num_texts,
        "refusals": _refusals(audit) if audit.status == Status.FAILED else [],
        "model_reading": selectors.audit_reading(audit),
    }
    return render(request, "audits/audit_detail.html", context)


VERDICT_LABELS = [
    ("watermarked", _("watermarked")),
    ("not_watermarked", _("not watermarked")),
    ("inconclusive", _("inconclusive")),
    ("failed", _("failed")),
    ("open", _("waiting")),
]


SORT_LABELS = [
    ("", _("submission order")),
    ("name", _("name")),
    ("verdict", _("verdict")),
    ("p_value", _("p-value, smallest first")),
    ("-p_value", _("p-value, largest first")),
    ("-scored", _("scored tokens, most first")),
    ("scored", _("scored tokens, fewest first")),
]
# The sortable columns of the results table: (sort name, heading).
SORTABLE = {"name": _("name"), "verdict": _("verdict"), "p_value": _("p-value")}
SORTABLE |= {"scored": _("scored tokens")}


def _columns(verdict: str, sort: str) -> dict[str, dict[str, str]]:
    """Per sortable column: its heading's link (the column's order, or its reverse when it
    is the current one) and its ``aria-sort``."""
    columns = {}
    for name, label in SORTABLE.items():
        current = sort.removeprefix("-") == name
        descending = sort.startswith("-")
        target = f"-{name}" if current and not descending else name
        columns[name] = {
            "label": str(label),
            "href": "?" + _query(verdict, target),
            "aria": ("descending" if descending else "ascending") if current else "none",
        }
    return columns


def _rounded(checks: Any) -> list[Any]:
    rows = list(checks)
    for check in rows:  # unsaved: in memory only
        check.log10_p, check.p_value = tiers.round_log10(check.log10_p), None
    return rows


def _query(verdict: str, sort: str) -> str:
    """The filter and order as a query string, for the pager and the exports to keep."""
    parts = [f"verdict={verdict}"] if verdict else []
    return "&".join(parts + ([f"sort={sort}"] if sort else []))


@login_required
def audit_progress(request: AuthenticatedHttpRequest, audit_id: uuid.UUID) -> JsonResponse:
    """The audit's progress for the page's script: numbers, and the same as the page's words
    (in the page's language, so the script holds none)."""
    audit = selectors.audit_get(request.user, audit_id)
    progress = selectors.audit_progress(audit)
    return JsonResponse({**progress, "text": _progress_texts(progress)})


def _progress_texts(progress: dict[str, Any]) -> dict[str, str]:
    counts = progress["counts"]
    remaining = progress["remaining_s"]
    return {
        "finished": number_format(progress["finished"], force_grouping=True),
        "total": number_format(progress["total"], force_grouping=True),
        "failed": number_format(counts["failed"], force_grouping=True),
        "elapsed": duration(progress["elapsed_s"]),
        "remaining": gettext("unknown yet") if remaining is None else duration(remaining),
    }


def duration(seconds: float) -> str:
    """``2 min 5 s``, ``40 s``, ``1 h 3 min`` in the page's language."""
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return gettext("%(h)s h %(m)s min") % {"h": hours, "m": minutes}
    if minutes:
        return gettext("%(m)s min %(s)s s") % {"m": minutes, "s": secs}
    return gettext("%(s)s s") % {"s": secs}


@login_required
def audit_delete(request: AuthenticatedHttpRequest, audit_id: uuid.UUID) -> HttpResponse:
    """GET asks for confirmation (works without JavaScript); POST deletes the audit and
    purges all its texts."""
    audit = selectors.audit_get(request.user, audit_id)
    if not may_delete(request.user, audit):
        raise PermissionDenied("only the submitter or a team admin may delete this audit")
    if request.method == "POST":
        audit_services.audit_delete(user=request.user, audit_id=audit.id)
        return redirect("audit-list")
    return render(request, "audits/audit_delete.html", {"audit": audit})
