"""The API token page (shown once, replaced on POST) and the login page's organization
sign-in button."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db


def test_the_token_page_needs_a_login(client, cast):
    answer = client.get("/accounts/token/")
    assert answer.status_code == 302 and "/accounts/login/" in answer["Location"]


def test_a_token_is_shown_once_when_created_and_never_again(client, cast):
    client.force_login(cast["alice"])
    before = client.get("/accounts/token/")
    assert "You have no token yet" in before.content.decode()
    assert "no-store" in before["Cache-Control"] or "no-cache" in before["Cache-Control"]
    created = client.post("/accounts/token/").content.decode()
    token = Token.objects.get(user=cast["alice"]).key
    assert f'<code id="api-token">{token}</code>' in created
    again = client.get("/accounts/token/").content.decode()
    assert token not in again and "You have a token" in again
    client.post("/accounts/token/")
    assert Token.objects.get(user=cast["alice"]).key != token


def test_the_login_page_offers_the_organization_sign_in_only_when_configured(client, settings):
    assert 'id="oidc-login"' not in client.get("/accounts/login/").content.decode()
    settings.PROVENANCE_OIDC = {**settings.PROVENANCE_OIDC, "ENABLED": True, "LABEL": "Acme SSO"}
    page = client.get("/accounts/login/", {"oidc": "refused"}).content.decode()
    assert 'id="oidc-login"' in page and "Acme SSO" in page and 'id="oidc-refused"' in page
    assert 'id="oidc-refused"' not in client.get("/accounts/login/").content.decode()
