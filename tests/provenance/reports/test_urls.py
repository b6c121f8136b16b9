"""The reports URLs resolve to their views."""

from __future__ import annotations

import uuid

from django.urls import resolve, reverse

from provenance.reports import api, urls, views

CHECK = uuid.UUID(int=7)


def test_each_name_reverses_to_its_path_and_resolves_to_its_view():
    assert reverse("jwks") == "/.well-known/jwks.json"
    assert resolve("/.well-known/jwks.json").func == api.jwks_view
    path = reverse("api-check-report", args=[CHECK])
    assert path == f"/api/v1/checks/{CHECK}/report"
    assert resolve(path).func.view_class is api.CheckReportApi
    page = reverse("check-report", args=[CHECK])
    assert page == f"/checks/{CHECK}/report/" and resolve(page).func == views.report_page
    assert resolve(page).kwargs == {"check_id": CHECK}
    assert {p.name for p in urls.urlpatterns} == {"jwks", "api-check-report", "check-report"}
