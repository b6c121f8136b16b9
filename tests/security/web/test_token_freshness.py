"""The API token's user and team are kept per process (provenance.accounts.auth through
provenance.lib.rowcache), yet every change to them is seen by the very next request: a token
revoked or expired, a user deactivated or moved to another team, a team's tier changed, each
written without signals (a queryset update, as another process or a shell would)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from knox.models import AuthToken
from rest_framework.test import APIClient

from provenance.accounts.models import Membership, Team

pytestmark = pytest.mark.django_db


def _client(user: User) -> tuple[AuthToken, APIClient]:
    row, token = AuthToken.objects.create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return row, client


def _checked(client: APIClient, text: str) -> str:
    response = client.post("/api/v1/checks?wait=5", {"text": text}, format="json")
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def test_a_revoked_token_is_refused_by_the_next_request(cast):
    row, client = _client(cast["alice"])
    for _ in range(3):  # kept by the process meanwhile
        assert client.get("/api/v1/checks").status_code == 200
    AuthToken.objects.filter(pk=row.pk).delete()
    assert client.get("/api/v1/checks").status_code == 401


def test_tokens_revoked_over_the_api_are_refused_next(cast):
    _, first = _client(cast["alice"])
    _, second = _client(cast["alice"])
    _, third = _client(cast["alice"])
    for client in (first, second, third):
        assert client.get("/api/v1/checks").status_code == 200
    assert first.post("/api/v1/token/revoke").status_code == 204
    assert first.get("/api/v1/checks").status_code == 401
    assert second.get("/api/v1/checks").status_code == 200
    assert second.post("/api/v1/token/revoke-all").status_code == 204
    assert second.get("/api/v1/checks").status_code == 401
    assert third.get("/api/v1/checks").status_code == 401


def test_a_deactivated_user_is_refused_by_the_next_request(cast):
    _, client = _client(cast["bob"])
    assert client.get("/api/v1/checks").status_code == 200
    User.objects.filter(pk=cast["bob"].pk).update(is_active=False)
    refused = client.get("/api/v1/checks")
    assert refused.status_code == 401 and "inactive" in refused.json()["detail"]
    User.objects.filter(pk=cast["bob"].pk).update(is_active=True)
    assert client.get("/api/v1/checks").status_code == 200


def test_a_token_that_expires_meanwhile_is_refused_and_deleted(cast):
    row, client = _client(cast["alice"])
    assert client.get("/api/v1/checks").status_code == 200
    AuthToken.objects.filter(pk=row.pk).update(expiry=timezone.now() - timedelta(seconds=1))
    assert client.get("/api/v1/checks").status_code == 401
    assert not AuthToken.objects.filter(pk=row.pk).exists()


def test_a_team_tier_changed_reaches_the_next_answer(cast, alice_key, wm_text):
    _, client = _client(cast["alice"])
    check_id = _checked(client, wm_text)
    detail = f"/api/v1/checks/{check_id}?tokens=1"
    assert "heatmap" in client.get(detail).json()  # auditor: the per-token data
    Team.objects.filter(pk=cast["acme"].pk).update(oracle_tier=Team.OracleTier.BASIC)
    basic = client.get(detail).json()
    assert "heatmap" not in basic and basic["log10_p"] == float(int(basic["log10_p"]))
    Team.objects.filter(pk=cast["acme"].pk).update(oracle_tier=Team.OracleTier.AUDITOR)
    assert "heatmap" in client.get(detail).json()


def test_a_user_moved_to_another_team_sees_that_team_next(cast, alice_key, wm_text):
    _, alice = _client(cast["alice"])
    _, bob = _client(cast["bob"])
    check_id = _checked(alice, wm_text)
    assert bob.get(f"/api/v1/checks/{check_id}").status_code == 200
    Membership.objects.filter(user=cast["bob"]).update(team=cast["other"])
    assert bob.get(f"/api/v1/checks/{check_id}").status_code == 404
    assert check_id not in {c["id"] for c in bob.get("/api/v1/checks").json()["results"]}


def test_each_request_gets_its_own_token_and_user(cast):
    from provenance.accounts.auth import TokenAuthentication

    _, token = AuthToken.objects.create(user=cast["alice"])
    auth = TokenAuthentication()
    user_a, row_a = auth.authenticate_credentials(token.encode())
    user_b, row_b = auth.authenticate_credentials(token.encode())
    assert user_a is not user_b and row_a is not row_b
    assert user_a.membership is not user_b.membership
    user_a.is_active = False  # a change made by one request
    row_a.pk = None
    user_a.membership.team.name = "changed"
    user_c, row_c = auth.authenticate_credentials(token.encode())
    assert user_c.is_active and row_c.pk == row_b.pk
    assert user_c.membership.team.name == "acme"
