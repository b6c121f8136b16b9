from __future__ import annotations

from django.urls import path, re_path

from provenance.checks import views
from provenance.checks.api import checks, detect, exports

urlpatterns = [
    path("", views.check_new, name="check-new"),
    path("checks/", views.check_list, name="check-list"),
    path("checks/<uuid:check_id>/", views.check_detail, name="check-detail"),
    path("checks/<uuid:check_id>/delete/", views.check_delete, name="check-delete"),
    path("detect", detect.DetectApi.as_view(), name="api-detect"),
    path("api/v1/checks", checks.CheckListCreateApi.as_view(), name="api-checks"),
    path("api/v1/checks/<uuid:check_id>", checks.CheckDetailApi.as_view(), name="api-check-detail"),
    re_path(
        r"^api/v1/checks/(?P<check_id>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/export\.(?P<fmt>csv|json)$",
        exports.CheckExportApi.as_view(),
        name="api-check-export",
    ),
]
