from __future__ import annotations

from django.urls import path, re_path

from provenance.checks import api, views

urlpatterns = [
    path("", views.check_new, name="check-new"),
    path("checks/", views.check_list, name="check-list"),
    path("checks/<uuid:check_id>/", views.check_detail, name="check-detail"),
    path("checks/<uuid:check_id>/delete/", views.check_delete, name="check-delete"),
    path("audits/", views.audit_list, name="audit-list"),
    path("audits/<uuid:audit_id>/", views.audit_detail, name="audit-detail"),
    path("audits/<uuid:audit_id>/delete/", views.audit_delete, name="audit-delete"),
    path("detect", api.DetectApi.as_view(), name="api-detect"),
    path("api/v1/checks", api.CheckListCreateApi.as_view(), name="api-checks"),
    path("api/v1/checks/<uuid:check_id>", api.CheckDetailApi.as_view(), name="api-check-detail"),
    path("api/v1/audits", api.AuditListCreateApi.as_view(), name="api-audits"),
    path("api/v1/audits/<uuid:audit_id>", api.AuditDetailApi.as_view(), name="api-audit-detail"),
    path(
        "api/v1/audits/<uuid:audit_id>/items", api.AuditItemsApi.as_view(), name="api-audit-items"
    ),
    re_path(
        r"^api/v1/checks/(?P<check_id>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/export\.(?P<fmt>csv|json)$",
        api.CheckExportApi.as_view(),
        name="api-check-export",
    ),
    re_path(
        r"^api/v1/audits/(?P<audit_id>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/export\.(?P<fmt>csv|json)$",
        api.AuditExportApi.as_view(),
        name="api-audit-export",
    ),
]
