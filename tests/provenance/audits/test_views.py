"""The audit pages: the team's list, one audit's counts and items, deletion with a
confirmation, for the submitter or a team admin only."""

from __future__ import annotations

import pytest

from provenance.accounts.models import Membership
from provenance.audits import views
from provenance.audits.services import audit_submit
from provenance.checks.models import Audit


@pytest.fixture
def audit(cast, alice_key):
    texts = [{"client_id": f"essay-{i}", "text": f"essay number {i}"} for i in range(3)]
    return audit_submit(user=cast["alice"], texts=texts)[0]


def _page(client, user, url, method="get"):
    client.force_login(user)
    return getattr(client, method)(url)


def test_the_list_shows_the_teams_audits_only(client, cast, audit):
    assert str(audit.id) in _page(client, cast["bob"], "/audits/").content.decode()
    assert str(audit.id) not in _page(client, cast["charlie"], "/audits/").content.decode()


def test_the_detail_page_shows_counts_and_items(client, cast, audit):
    response = _page(client, cast["bob"], f"/audits/{audit.id}/")
    assert response.status_code == 200
    assert response.context["counts"]["open"] == 3
    assert [c.client_id for c in response.context["page"]] == ["essay-0", "essay-1", "essay-2"]
    html = response.content.decode()
    assert "essay-2" in html and 'id="delete-audit"' not in html  # bob may not delete
    assert _page(client, cast["charlie"], f"/audits/{audit.id}/").status_code == 404


def test_the_detail_view_offers_deletion_to_the_submitter(rf, cast, audit):
    request = rf.get(f"/audits/{audit.id}/")
    request.user = cast["alice"]
    html = views.audit_detail(request, audit.id).content.decode()
    assert 'id="delete-audit"' in html and "essay-0" in html


def test_signed_out_the_pages_ask_to_sign_in(client, audit):
    response = client.get(f"/audits/{audit.id}/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_deleting_asks_first_and_only_the_submitter_or_an_admin_may(client, cast, audit):
    url = f"/audits/{audit.id}/delete/"
    assert _page(client, cast["bob"], url).status_code == 403
    assert _page(client, cast["bob"], url, "post").status_code == 403
    confirm = _page(client, cast["alice"], url)
    assert confirm.status_code == 200 and Audit.objects.get(id=audit.id).deleted_at is None
    done = _page(client, cast["alice"], url, "post")
    assert done.status_code == 302 and done["Location"] == "/audits/"
    assert Audit.objects.get(id=audit.id).deleted_at is not None
    assert _page(client, cast["alice"], f"/audits/{audit.id}/").status_code == 404


def test_a_team_admin_may_delete_a_members_audit(client, cast, audit):
    Membership.objects.filter(user=cast["bob"]).update(is_admin=True)
    response = _page(client, cast["bob"], f"/audits/{audit.id}/delete/", "post")
    assert response.status_code == 302
    assert Audit.objects.get(id=audit.id).deleted_at is not None
