from __future__ import annotations

from django.urls import path

from provenance.accounts import oidc, views
from provenance.accounts.api import TokenRevokeAllApi, TokenRevokeApi

urlpatterns = [
    path("accounts/token/", views.api_token, name="api-token"),
    path("api/v1/token/revoke", TokenRevokeApi.as_view(), name="api-token-revoke"),
    path("api/v1/token/revoke-all", TokenRevokeAllApi.as_view(), name="api-token-revoke-all"),
    # Organization sign-in (404 unless PROVENANCE_OIDC_CLIENT_ID is set); mozilla-django-oidc
    # looks these names up.
    path("oidc/authenticate/", oidc.authenticate_view, name="oidc_authentication_init"),
    path("oidc/callback/", oidc.callback_view, name="oidc_authentication_callback"),
]
