"""The project's URL names resolve to their views and back."""

from __future__ import annotations

import pytest
from django.urls import resolve, reverse

from provenance import urls
from provenance.accounts import views as account_views


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("login", "/accounts/login/"),
        ("logout", "/accounts/logout/"),
        ("api-schema", "/api/schema/"),
        ("api-docs", "/api/docs/"),
        ("api-token", "/accounts/token/"),
        ("check-new", "/"),
        ("api-checks", "/api/v1/checks"),
    ],
)
def test_each_name_reverses_to_its_path_and_back(name, path):
    assert reverse(name) == path
    assert resolve(path).url_name == name


def test_the_login_name_is_the_product_login_view():
    assert resolve(reverse("login")).func.view_class is account_views.LoginView
    assert any(str(p.pattern) == "admin/" for p in urls.urlpatterns)


def test_the_schema_and_the_admin_answer(client, api_for):
    assert client.get("/api/schema/").status_code == 401  # signed-in users only
    schema = api_for("alice").get("/api/schema/")
    assert schema.status_code == 200 and b"/api/v1/checks" in schema.content
    assert client.get("/admin/").status_code == 302  # to the admin's sign-in
