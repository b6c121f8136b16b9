"""The accounts admin: teams with their members inline, memberships searchable."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

from provenance.accounts import admin
from provenance.accounts.models import Membership

pytestmark = pytest.mark.django_db


@pytest.fixture
def root_client(client, cast):
    client.force_login(User.objects.create_superuser("root", "root@x.org", "root-pass-123"))
    return client


def test_the_team_list_and_page_show_the_team_and_its_members(root_client, cast):
    listing = root_client.get("/admin/accounts/team/")
    assert listing.status_code == 200
    assert "acme" in listing.content.decode() and "other" in listing.content.decode()
    page = root_client.get(f"/admin/accounts/team/{cast['acme'].pk}/change/").content.decode()
    assert "alice" in page and "bob" in page and "charlie" not in page
    assert admin.MembershipInline in admin.TeamAdmin.inlines


def test_memberships_are_searched_by_user_and_filtered_by_team(root_client, cast):
    found = root_client.get("/admin/accounts/membership/", {"q": "charlie"}).content.decode()
    assert "charlie in other" in found and "alice in acme" not in found
    team = root_client.get("/admin/accounts/membership/", {"team__id__exact": cast["acme"].pk})
    assert "alice in acme" in team.content.decode()
    assert "charlie in other" not in team.content.decode()


def test_an_api_token_is_not_shown_on_a_team_page(root_client, cast):
    token = Token.objects.create(user=cast["alice"]).key
    page = root_client.get(f"/admin/accounts/team/{cast['acme'].pk}/change/").content.decode()
    membership = Membership.objects.get(user=cast["alice"])
    assert token not in page
    assert (
        token
        not in root_client.get(
            f"/admin/accounts/membership/{membership.pk}/change/"
        ).content.decode()
    )


def test_a_team_member_who_is_not_staff_is_sent_to_the_login(client, cast):
    client.force_login(cast["alice"])
    assert client.get("/admin/accounts/team/").status_code == 302
