"""Pages of the registry for team members: which keys a check tests (never their values) and
what each key's calibration measured. Administration (create, rotate, retire) lives in the
Django admin; a team admin may queue a key's calibration from here."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from provenance.accounts.selectors import team_for_user
from provenance.keys import calibration
from provenance.keys.selectors import (
    GENRE_LABELS,
    calibration_assisted_rates,
    calibration_figures,
    calibration_rates,
    key_family,
    keys_visible_to,
    latest_calibrations,
    may_calibrate,
    pending_calibrations,
)
from provenance.lib import calibration_chart


@login_required
def key_list(request: HttpRequest) -> HttpResponse:
    team = team_for_user(request.user)
    keys = list(keys_visible_to(team).order_by("status", "name"))
    family = key_family(team)
    latest = latest_calibrations(keys)
    pending = pending_calibrations(keys)
    rows = [
        {
            "key": key,
            "calibration": latest.get(key.id),
            "rates": calibration_rates(latest.get(key.id)),
            "assisted": calibration_assisted_rates(latest.get(key.id)),
            "pending": key.id in pending,
            "tested_by_default": key.id in family.reasons,
            "may_calibrate": may_calibrate(request.user, key),
            **charts(calibration_figures(latest.get(key.id))),
        }
        for key in keys
    ]
    context = {"rows": rows, "team": team, "family": family.summary()}
    return render(request, "keys/key_list.html", context)


def charts(figures: dict[str, Any] | None) -> dict[str, Any]:
    """A calibration's two charts from the figures the API answers too: the rates (the
    model-assisted ones after the others) and the power curve; none before a calibration."""
    if figures is None:
        return {"rates_chart": {}, "power_chart": {}}
    rows = [
        {**rate, "label": GENRE_LABELS.get(rate["genre"], rate["genre"]), "assisted": assisted}
        for assisted, rates in ((False, figures["rates"]), (True, figures["assisted_rates"]))
        for rate in rates
    ]
    return {
        "rates_chart": calibration_chart.rates_chart(rows, figures["threshold"]),
        "power_chart": calibration_chart.power_chart(figures["power"]),
    }


@login_required
@require_POST
def key_calibrate(request: HttpRequest, key_id: uuid.UUID) -> HttpResponse:
    """Queue a calibration of a key the caller's team may test, if the caller may."""
    key = keys_visible_to(team_for_user(request.user)).filter(id=key_id).first()
    if key is None:
        raise Http404
    if not may_calibrate(request.user, key):
        raise PermissionDenied("only an admin of the key's team may calibrate it")
    if key.id not in pending_calibrations([key]):  # the page shows "queued" until it is done
        calibration.calibration_request(key=key, requested_by=request.user)  # type: ignore[arg-type]
    return redirect("key-list")
