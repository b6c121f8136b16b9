"""The accounts admin: teams with their members inline, memberships searchable, API tokens
listed by prefix and only revoked."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from knox.models import AuthToken

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
    _, token = AuthToken.objects.create(user=cast["alice"])
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


def test_api_tokens_are_listed_by_prefix_never_shown_and_only_revoked(root_client, cast):
    row, token = AuthToken.objects.create(user=cast["alice"])
    listing = root_client.get("/admin/knox/authtoken/").content.decode()
    assert row.token_key in listing and "alice" in listing and token not in listing
    page = root_client.get(f"/admin/knox/authtoken/{row.pk}/change/").content.decode()
    assert token not in page and row.token_key in page
    assert root_client.get("/admin/knox/authtoken/add/").status_code == 403
    assert isinstance(admin.admin.site._registry[AuthToken], admin.ApiTokenAdmin)
    deleted = root_client.post(
        "/admin/knox/authtoken/",
        {"action": "delete_selected", "_selected_action": [row.pk], "post": "yes"},
    )
    assert deleted.status_code == 302 and not AuthToken.objects.exists()
