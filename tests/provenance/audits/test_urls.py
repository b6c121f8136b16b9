"""The audits' URL names resolve to their views and back."""

from __future__ import annotations

import uuid

import pytest
from django.urls import Resolver404, resolve, reverse

from provenance.audits import api, urls, views

ID = uuid.UUID("6f1c2a3e-8d4b-4e5f-9a7c-1b2d3e4f5a6b")


@pytest.mark.parametrize(
    ("name", "kwargs", "path", "view"),
    [
        ("audit-list", {}, "/audits/", views.audit_list),
        ("audit-detail", {"audit_id": ID}, f"/audits/{ID}/", views.audit_detail),
        ("audit-delete", {"audit_id": ID}, f"/audits/{ID}/delete/", views.audit_delete),
        ("api-audits", {}, "/api/v1/audits", api.AuditListCreateApi),
        ("api-audit-detail", {"audit_id": ID}, f"/api/v1/audits/{ID}", api.AuditDetailApi),
        ("api-audit-items", {"audit_id": ID}, f"/api/v1/audits/{ID}/items", api.AuditItemsApi),
        (
            "api-audit-export",
            {"audit_id": str(ID), "fmt": "json"},
            f"/api/v1/audits/{ID}/export.json",
            api.AuditExportApi,
        ),
    ],
)
def test_each_name_reverses_and_resolves_to_its_view(name, kwargs, path, view):
    assert reverse(name, kwargs=kwargs) == path
    match = resolve(path)
    assert match.url_name == name
    assert getattr(match.func, "view_class", match.func) is view
    assert name in {p.name for p in urls.urlpatterns}


def test_an_id_that_is_not_a_uuid_does_not_resolve():
    with pytest.raises(Resolver404):
        resolve("/audits/not-a-uuid/")
