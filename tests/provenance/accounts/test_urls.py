"""The accounts URLs resolve to their views (the OpenID Connect names are the ones
mozilla-django-oidc looks up)."""

from __future__ import annotations

import pytest
from django.urls import resolve, reverse

from provenance.accounts import oidc, urls, views


@pytest.mark.parametrize(
    "name,path,view",
    [
        ("api-token", "/accounts/token/", views.api_token),
        ("oidc_authentication_init", "/oidc/authenticate/", oidc.authenticate_view),
        ("oidc_authentication_callback", "/oidc/callback/", oidc.callback_view),
    ],
)
def test_each_name_reverses_to_its_path_and_resolves_to_its_view(name, path, view):
    assert reverse(name) == path
    assert resolve(path).func == view
    assert name in {p.name for p in urls.urlpatterns}


def test_the_login_view_is_the_accounts_one():
    assert resolve(reverse("login")).func.view_class is views.LoginView
