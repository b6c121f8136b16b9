"""Pages: paste a text, see the verdict and heatmap; history. Thin: parse, call one service or
selector, render."""

from __future__ import annotations

import uuid
from typing import Any, cast

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from rest_framework.request import Request

from provenance.accounts.auth import AuthenticatedHttpRequest
from provenance.accounts.models import Team
from provenance.accounts.selectors import oracle_tier, team_for_user
from provenance.checks import selectors, services, tiers
from provenance.checks.filters import CheckFilter
from provenance.checks.models import Check, Reading, Status
from provenance.checks.services import deletion
from provenance.errors import PayloadTooLarge, ProblemError
from provenance.keys.selectors import GENRE_LABELS, exact_for, keys_visible_to
from provenance.lib import heatmap
from provenance.throttling import DetectionThrottle


def _detection_allowed(request: HttpRequest) -> bool:
    """The API's per-user detection rate, applied to the paste form. DRF's throttle reads
    only the request's ``user`` and ``META``, which a Django request has as well."""
    return DetectionThrottle().allow_request(cast(Request, request), None)


@login_required
def check_new(request: AuthenticatedHttpRequest) -> HttpResponse:
    context = {"keys": keys_visible_to(team_for_user(request.user)), "text": ""}
    if request.method == "POST":
        text = request.POST.get("text", "")
        if not _detection_allowed(request):
            context.update(error=gettext("too many checks in a short time; try again in a minute"))
            return render(request, "checks/check_new.html", context, status=429)
        try:
            check = _check_from_form(request, text)
        except ProblemError as exc:
            context.update(error=_page_message(exc), text=text[:10_000])
            return render(request, "checks/check_new.html", context, status=exc.status_code)
        return redirect("check-detail", check_id=check.id)
    return render(request, "checks/check_new.html", context)


# Documents refused on the paste form, in the page's language (the API answers the English
# message and the same code).
DOCUMENT_MESSAGES = {
    "document_unsupported": _(
        "%(file)s: unsupported file type; send .txt, .md, .html, .docx or .pdf"
    ),
    "document_encrypted": _("%(file)s: the file is password-protected"),
    "document_corrupt": _("%(file)s: the file is corrupt or not of its type"),
    "document_image_only": _(
        "%(file)s: the PDF has no text layer (scanned images?); run OCR on it first"
    ),
    "document_empty": _("%(file)s: the document contains no text"),
    "document_too_large": _("%(file)s: the file is larger than the limit"),
    "document_too_many_pages": _("%(file)s: the PDF has more pages than the limit"),
    "document_too_complex": _("%(file)s: the PDF is too complex to read"),
    "document_too_slow": _("%(file)s: reading the file took longer than the time limit"),
}


def _page_message(exc: ProblemError) -> str:
    template = DOCUMENT_MESSAGES.get(exc.code)
    if template is None:
        return exc.message
    return str(template) % {"file": getattr(exc, "filename", "")}


def _check_from_form(request: AuthenticatedHttpRequest, text: str) -> Check:
    """A chosen file wins over the text box (the form offers both)."""
    upload = request.FILES.get("file")
    if upload is None:  # a short text gets its model-free verdict in the request
        return services.check_create(user=request.user, text=text, inline=True)
    if (upload.size or 0) > settings.PROVENANCE_MAX_DOCUMENT_BYTES:
        limit = settings.PROVENANCE_MAX_DOCUMENT_BYTES
        message = gettext("%(file)s: the file is %(size)s bytes; the limit is %(limit)s")
        raise PayloadTooLarge(message % {"file": upload.name, "size": upload.size, "limit": limit})
    # Staged for a worker to read: the check's page shows the verdict, or why the file was
    # refused (``failure_message``), in the page's language.
    return services.check_document_create(
        user=request.user, filename=upload.name or "", content=upload.read()
    )


def failure_message(check: Check) -> str:
    """Why a check failed, for its page: a refused document's reason in the page's language
    (the API answers the English message and the same code)."""
    problem = services.refusal_problem(check.failure_code, check.failure_reason, check.filename)
    return _page_message(problem) if check.failure_code else check.failure_reason


@login_required
def check_detail(request: AuthenticatedHttpRequest, check_id: uuid.UUID) -> HttpResponse:
    check = selectors.check_get(request.user, check_id)
    finished = check.status in (Status.DONE, Status.FAILED)
    hypotheses = list(check.hypotheses.all())
    shown = check.heatmap_compact
    if shown is None and finished and check.purged_at is None:  # scored before it was stored
        shown = heatmap.compact(check.token_data)
    exact = exact_for(request.user, check.key_ids)  # a key of another team: as basic
    if not exact:
        tiers.basic_view(check, hypotheses)  # in memory only: nothing is saved
        shown = None  # no per-token scores, no chart
    # the decision's best hypothesis as stored, never a minimum of the (rounded) p-values
    best = next((h for h in hypotheses if h.index == check.best_index), None)
    context = {
        "check": check,
        "finished": finished,
        "reading_pending": check.status == Status.DONE and check.reading == Reading.PENDING,
        "hypotheses": hypotheses,
        "best": best,
        "heatmap": shown,
        "buckets": ",".join(map(str, heatmap.BUCKETS)),
        "span_ranges": heatmap.span_ranges(check.spans),
        "span_sentences": heatmap.span_sentences(check.spans),
        "chart": heatmap.chart(
            shown,
            check.threshold,
            check.num_hypotheses or 1,
            weighted=best is not None and best.weighted_log10_p is not None,
        ),
        "notice": selectors.queue_notice(check),
        "may_delete": selectors.may_delete(request.user, check),
        "tier": oracle_tier(request.user) if exact else Team.OracleTier.BASIC,
        "key_calibration": _calibration(check),
        "failure": failure_message(check) if check.status == Status.FAILED else "",
    }
    return render(request, "checks/check_detail.html", context)


def _calibration(check: Check) -> dict[str, Any] | None:
    """The best key's measured rate as stored when the check was scored, for the verdict to
    name it (``measured``: None when the key was not calibrated then)."""
    if check.best_key_id is None:
        return None
    measured = check.key_measured_fpr
    if measured is None:
        return {"measured": None}
    return {
        "measured": measured,
        "measured_at": parse_datetime(measured["measured_at"] or ""),
        "rates": [
            {"label": GENRE_LABELS.get(genre, genre), "rate": rate}
            for genre, rate in measured["genres"].items()
        ],
        "flagged": measured["above_threshold"],
    }


@login_required
def check_delete(request: AuthenticatedHttpRequest, check_id: uuid.UUID) -> HttpResponse:
    """GET asks for confirmation (works without JavaScript); POST deletes."""
    check = selectors.check_get(request.user, check_id)
    if not selectors.may_delete(request.user, check):
        raise PermissionDenied("only the submitter or a team admin may delete this check")
    if request.method == "POST":
        deletion.check_delete(user=request.user, check_id=check.id)
        return redirect("check-list")
    return render(request, "checks/check_delete.html", {"check": check})


@login_required
def check_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The team's history, narrowed by the query's filters (``filters.CheckFilter``, the
    API's too); a filter that does not validate lists nothing and says why (400)."""
    history = CheckFilter(request.GET, request=request)
    valid = history.is_valid()
    found = history.qs if valid else history.queryset.none()
    page = Paginator(found, HISTORY_PAGE).get_page(request.GET.get("page"))
    tiered(request, page)
    context = {"page": page, "filter": history, "form": history.form}
    return render(request, "checks/check_list.html", context, status=200 if valid else 400)


HISTORY_PAGE = 50


def tiered(request: HttpRequest, page: Any) -> None:
    page.object_list = list(page.object_list)
    for check in page.object_list:
        if not exact_for(request.user, check.key_ids):
            tiers.basic_view(check, [])
