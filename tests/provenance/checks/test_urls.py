"""The checks' URL names resolve to their views and back."""

from __future__ import annotations

import uuid

import pytest
from django.urls import resolve, reverse

from provenance.checks import urls, views
from provenance.checks.api import checks, detect, exports

ID = uuid.UUID("6f1c2a3e-8d4b-4e5f-9a7c-1b2d3e4f5a6b")


@pytest.mark.parametrize(
    ("name", "kwargs", "path", "view"),
    [
        ("check-new", {}, "/", views.check_new),
        ("check-list", {}, "/checks/", views.check_list),
        ("check-detail", {"check_id": ID}, f"/checks/{ID}/", views.check_detail),
        ("check-delete", {"check_id": ID}, f"/checks/{ID}/delete/", views.check_delete),
        ("api-detect", {}, "/detect", detect.DetectApi),
        ("api-checks", {}, "/api/v1/checks", checks.CheckListCreateApi),
        ("api-check-detail", {"check_id": ID}, f"/api/v1/checks/{ID}", checks.CheckDetailApi),
        (
            "api-check-export",
            {"check_id": str(ID), "fmt": "csv"},
            f"/api/v1/checks/{ID}/export.csv",
            exports.CheckExportApi,
        ),
    ],
)
def test_each_name_reverses_and_resolves_to_its_view(name, kwargs, path, view):
    assert reverse(name, kwargs=kwargs) == path
    match = resolve(path)
    assert match.url_name == name
    assert getattr(match.func, "view_class", match.func) is view
    assert name in {p.name for p in urls.urlpatterns}


def test_an_export_format_other_than_csv_or_json_does_not_resolve():
    from django.urls import Resolver404

    with pytest.raises(Resolver404):
        resolve(f"/api/v1/checks/{ID}/export.xml")
