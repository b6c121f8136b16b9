from __future__ import annotations

from django.urls import path, re_path

from provenance.audits import api, views

urlpatterns = [
    path("audits/", views.audit_list, name="audit-list"),
    path("audits/<uuid:audit_id>/", views.audit_detail, name="audit-detail"),
    path("audits/<uuid:audit_id>/progress", views.audit_progress, name="audit-progress"),
    path("audits/<uuid:audit_id>/delete/", views.audit_delete, name="audit-delete"),
    path("api/v1/audits", api.AuditListCreateApi.as_view(), name="api-audits"),
    path("api/v1/audits/<uuid:audit_id>", api.AuditDetailApi.as_view(), name="api-audit-detail"),
    path(
        "api/v1/audits/<uuid:audit_id>/items", api.AuditItemsApi.as_view(), name="api-audit-items"
    ),
    re_path(
        r"^api/v1/audits/(?P<audit_id>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/export\.(?P<fmt>csv|json)$",
        api.AuditExportApi.as_view(),
        name="api-audit-export",
    ),
]
