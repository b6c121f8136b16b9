"""Writes about teams and users: creation, one team per user, the groups of an organization
sign-in, and the API token's rotation."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.test import Client
from knox.crypto import hash_token
from knox.models import AuthToken

from provenance.accounts.models import Membership, Team
from provenance.accounts.services import (
    api_token_revoke,
    api_token_rotate,
    membership_set,
    team_create,
    user_create,
    user_credentials_revoke,
    user_sync_from_groups,
)

pytestmark = pytest.mark.django_db


def test_a_new_team_starts_at_the_basic_tier():
    assert team_create(name="newcomers").oracle_tier == Team.OracleTier.BASIC
    assert team_create(name="auditors", oracle_tier="auditor").oracle_tier == "auditor"


def test_a_user_is_created_with_a_hashed_password_and_the_team_given():
    team = team_create(name="acme")
    user = user_create(username="dana", password="dana-pass-123", team=team, email="d@x.org")
    assert user.check_password("dana-pass-123") and user.password != "dana-pass-123"
    assert user.membership.team == team and user.email == "d@x.org"
    assert not Membership.objects.filter(user=user_create(username="eve", password="p")).exists()


def test_a_user_whose_membership_fails_is_not_created():
    with pytest.raises(ValueError):
        user_create(username="dana", password="p", team=Team(name="never saved"))
    assert not User.objects.filter(username="dana").exists()


def test_membership_set_moves_a_user_to_one_other_team(cast):
    membership_set(user=cast["alice"], team=cast["other"])
    assert Membership.objects.filter(user=cast["alice"]).get().team == cast["other"]


def test_groups_create_the_team_make_an_admin_and_grant_then_revoke_the_playground(cast):
    user = cast["charlie"]
    user_sync_from_groups(user=user, team_name="research", is_admin=True, playground=True)
    membership = Membership.objects.get(user=user)
    assert membership.team.name == "research" and membership.is_admin
    assert membership.team.oracle_tier == Team.OracleTier.BASIC
    assert User.objects.get(pk=user.pk).has_perm("playground.use_playground")
    user_sync_from_groups(user=user, team_name="acme", is_admin=False, playground=False)
    membership.refresh_from_db()
    assert membership.team == cast["acme"] and not membership.is_admin
    assert not User.objects.get(pk=user.pk).has_perm("playground.use_playground")
    assert Team.objects.filter(name="acme").count() == 1  # the existing team, not a new one


def test_rotating_the_api_token_revokes_the_old_one(cast):
    _, first = api_token_rotate(user=cast["alice"])
    row, second = api_token_rotate(user=cast["alice"])
    assert first != second and len(second) == 64
    digests = AuthToken.objects.filter(user=cast["alice"]).values_list("digest", flat=True)
    assert list(digests) == [hash_token(second)] == [row.digest]


def test_revoking_removes_every_token_of_the_user_only(cast):
    AuthToken.objects.create(user=cast["alice"])
    AuthToken.objects.create(user=cast["alice"])
    AuthToken.objects.create(user=cast["bob"])
    assert api_token_revoke(user=cast["alice"]) == 2
    assert list(AuthToken.objects.values_list("user__username", flat=True)) == ["bob"]


def test_revoking_credentials_ends_the_users_sessions_and_tokens_only(cast):
    clients = {name: Client() for name in ("alice", "bob")}
    for name, client in clients.items():
        client.force_login(cast[name])
        AuthToken.objects.create(user=cast[name])
    user_credentials_revoke(user=cast["alice"])
    assert AuthToken.objects.get().user == cast["bob"]
    assert Session.objects.count() == 1
    assert clients["bob"].get("/checks/").status_code == 200
    assert clients["alice"].get("/checks/").status_code == 302
