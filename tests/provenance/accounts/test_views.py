"""The API token page (shown once, replaced or revoked on POST, only its prefix kept) and the
login page's organization sign-in button."""

from __future__ import annotations

import re

import pytest
from django.utils import translation
from knox.models import AuthToken

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
    token = re.search(r'<code id="api-token">([0-9a-f]{64})</code>', created).group(1)
    row = AuthToken.objects.get(user=cast["alice"])
    assert token.startswith(row.token_key) and row.digest != token
    again = client.get("/accounts/token/").content.decode()
    assert token not in again and "You have a token" in again and row.token_key in again
    assert client.get("/api/v1/checks", HTTP_AUTHORIZATION=f"Token {token}").status_code == 200
    client.post("/accounts/token/")
    assert AuthToken.objects.get(user=cast["alice"]).digest != row.digest
    assert client.get("/api/v1/checks", HTTP_AUTHORIZATION=f"Token {token}").status_code == 401


def test_a_token_is_revoked_from_the_page(client, cast):
    client.force_login(cast["alice"])
    created = client.post("/accounts/token/").content.decode()
    token = re.search(r'<code id="api-token">([0-9a-f]{64})</code>', created).group(1)
    revoked = client.post("/accounts/token/", {"action": "revoke"}).content.decode()
    assert "You have no token yet" in revoked and 'id="api-token-revoke"' not in revoked
    assert not AuthToken.objects.filter(user=cast["alice"]).exists()
    assert client.get("/api/v1/checks", HTTP_AUTHORIZATION=f"Token {token}").status_code == 401


def test_the_login_page_offers_the_organization_sign_in_only_when_configured(client, settings):
    assert 'id="oidc-login"' not in client.get("/accounts/login/").content.decode()
    settings.PROVENANCE_OIDC = {**settings.PROVENANCE_OIDC, "ENABLED": True, "LABEL": "Acme SSO"}
    page = client.get("/accounts/login/", {"oidc": "refused"}).content.decode()
    assert 'id="oidc-login"' in page and "Acme SSO" in page and 'id="oidc-refused"' in page
    assert 'id="oidc-refused"' not in client.get("/accounts/login/").content.decode()


def test_the_token_page_and_the_lockout_page_are_translated(client, cast, settings):
    client.force_login(cast["alice"])
    client.post("/accounts/token/")
    page = client.get("/accounts/token/", HTTP_ACCEPT_LANGUAGE="ja").content.decode()
    assert "トークンは <code>" in page and "トークンを失効させる" in page
    client.logout()
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        client.post("/accounts/login/", {"username": "bob", "password": f"guess-{attempt}"})
    try:
        locked = client.post(
            "/accounts/login/", {"username": "bob", "password": "x"}, HTTP_ACCEPT_LANGUAGE="ko"
        )
    finally:
        translation.deactivate()  # the lockout answer leaves Korean active in this thread
    assert locked.status_code == 429 and "로그인이 잠겼습니다" in locked.content.decode()
