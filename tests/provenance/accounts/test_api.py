"""Token revocation over the API: the token sent, or every token of its user."""

from __future__ import annotations

import pytest
from knox.models import AuthToken
from rest_framework.test import APIClient

from provenance.accounts.api import TokenRevokeAllApi, TokenRevokeApi
from provenance.accounts.auth import TokenAuthentication

pytestmark = pytest.mark.django_db


def _client(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def test_revoke_ends_the_token_sent_and_no_other(cast):
    _, first = AuthToken.objects.create(user=cast["alice"])
    _, second = AuthToken.objects.create(user=cast["alice"])
    assert _client(first).post("/api/v1/token/revoke").status_code == 204
    assert _client(first).get("/api/v1/checks").status_code == 401
    assert _client(second).get("/api/v1/checks").status_code == 200


def test_revoke_all_ends_every_token_of_the_user_only(cast):
    _, first = AuthToken.objects.create(user=cast["alice"])
    _, second = AuthToken.objects.create(user=cast["alice"])
    _, bobs = AuthToken.objects.create(user=cast["bob"])
    assert _client(first).post("/api/v1/token/revoke-all").status_code == 204
    assert _client(second).get("/api/v1/checks").status_code == 401
    assert _client(bobs).get("/api/v1/checks").status_code == 200


def test_revoking_needs_a_token(client, cast):
    assert client.post("/api/v1/token/revoke").status_code == 401
    client.force_login(cast["alice"])  # a session is not a token to revoke
    assert client.post("/api/v1/token/revoke").status_code == 401
    for view in (TokenRevokeApi, TokenRevokeAllApi):
        assert view.authentication_classes == (TokenAuthentication,)
