"""Reads about teams: the caller's team, tier and auditor status; one read per user within
``teams_memoized``."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from provenance.accounts.models import Membership
from provenance.accounts.selectors import (
    is_auditor,
    is_team_admin,
    oracle_tier,
    team_for_user,
    teams_memoized,
)
from provenance.accounts.services import team_create, user_create

pytestmark = pytest.mark.django_db


def test_a_users_team_and_tier(cast):
    assert team_for_user(cast["alice"]) == cast["acme"]
    assert oracle_tier(cast["alice"]) == "auditor" and is_auditor(cast["alice"])
    basic = team_create(name="basics")
    dana = user_create(username="dana", password="p", team=basic)
    assert oracle_tier(dana) == "basic" and not is_auditor(dana)


def test_no_team_and_anonymous_get_the_basic_tier(cast):
    loner = user_create(username="loner", password="p")
    for user in (loner, AnonymousUser()):
        assert team_for_user(user) is None
        assert oracle_tier(user) == "basic" and not is_auditor(user)


def test_within_the_memo_a_users_team_is_read_once(cast):
    alice = User.objects.get(pk=cast["alice"].pk)
    with teams_memoized(), CaptureQueriesContext(connection) as queries:
        assert [team_for_user(alice) for _ in range(3)] == [cast["acme"]] * 3
    assert len(queries) == 1
    with CaptureQueriesContext(connection) as unmemoized:
        team_for_user(alice), team_for_user(alice)
    assert len(unmemoized) == 2


def test_a_membership_read_with_the_user_costs_no_query(cast):
    alice = User.objects.select_related("membership__team").get(pk=cast["alice"].pk)
    with CaptureQueriesContext(connection) as queries:
        assert team_for_user(alice) == cast["acme"]
    assert len(queries) == 0


def test_only_an_admin_membership_makes_a_team_admin(cast):
    assert not is_team_admin(cast["alice"]) and not is_team_admin(AnonymousUser())
    assert not is_team_admin(None)
    Membership.objects.filter(user=cast["alice"]).update(is_admin=True)
    assert is_team_admin(cast["alice"]) and not is_team_admin(cast["bob"])
