"""Teams, memberships and external identities: names, uniqueness, one team per user."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from provenance.accounts.models import ExternalIdentity, Membership, Team

pytestmark = pytest.mark.django_db


def test_teams_are_named_unique_and_listed_by_name(cast):
    assert str(cast["acme"]) == "acme"
    assert [t.name for t in Team.objects.all()] == ["acme", "other"]
    with pytest.raises(IntegrityError), transaction.atomic():
        Team.objects.create(name="acme")


def test_a_retention_period_is_at_least_one_day(cast):
    team = cast["acme"]
    team.retention_days = 0
    with pytest.raises(ValidationError, match="retention_days"):
        team.full_clean()
    team.retention_days = None
    team.full_clean()  # empty: the deployment's default


def test_a_user_belongs_to_at_most_one_team(cast):
    membership = Membership.objects.get(user=cast["alice"])
    assert str(membership) == "alice in acme" and not membership.is_admin
    with pytest.raises(IntegrityError), transaction.atomic():
        Membership.objects.create(user=cast["alice"], team=cast["other"])


def test_an_external_identity_is_one_subject_for_one_user(cast):
    identity = ExternalIdentity.objects.create(user=cast["alice"], subject="sub-1")
    assert str(identity) == "alice (OpenID Connect)"
    with pytest.raises(IntegrityError), transaction.atomic():
        ExternalIdentity.objects.create(user=cast["bob"], subject="sub-1")


def test_deleting_a_team_deletes_its_memberships(cast):
    cast["acme"].delete()
    assert not Membership.objects.filter(user__username__in=["alice", "bob"]).exists()
