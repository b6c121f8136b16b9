from __future__ import annotations

from django.urls import path

from provenance.reports import api, views

urlpatterns = [
    path(".well-known/jwks.json", api.jwks_view, name="jwks"),
    path(
        "api/v1/checks/<uuid:check_id>/report",
        api.CheckReportApi.as_view(),
        name="api-check-report",
    ),
    path("checks/<uuid:check_id>/report/", views.report_page, name="check-report"),
]
