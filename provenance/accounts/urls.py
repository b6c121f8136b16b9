from __future__ import annotations

from django.urls import path

from provenance.accounts import oidc, views

urlpatterns = [
    path("accounts/token/", views.api_token, name="api-token"),
    # Organization sign-in (404 unless PROVENANCE_OIDC_CLIENT_ID is set); mozilla-django-oidc
    # looks these names up.
    path("oidc/authenticate/", oidc.authenticate_view, name="oidc_authentication_init"),
    path("oidc/callback/", oidc.callback_view, name="oidc_authentication_callback"),
]
