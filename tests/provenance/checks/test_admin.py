"""The checks' admin: list and change pages render for a superuser, results are read-only,
and neither the text's token data nor a key value is on the page."""

from __future__ import annotations

import pytest

from provenance.accounts.services import user_create
from provenance.checks.admin import CheckAdmin
from provenance.checks.models import Check
from provenance.checks.services import check_create, check_score
from tests.provenance.conftest import KEY_VALUE


@pytest.fixture
def admin_client(client, cast):
    root = user_create(username="root", password="root-pass-123", is_staff=True, is_superuser=True)
    client.force_login(root)
    return client


@pytest.fixture
def scored(cast, alice_key, wm_text):
    check = check_create(user=cast["alice"], text=wm_text)
    check_score(check.id)
    return Check.objects.get(id=check.id)


def test_the_changelist_and_change_page_render_without_secrets(admin_client, scored):
    listing = admin_client.get("/admin/checks/check/")
    assert listing.status_code == 200 and str(scored.id) in listing.content.decode()
    page = admin_client.get(f"/admin/checks/check/{scored.id}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "acme-main" in html  # the hypothesis inline names its key
    assert str(KEY_VALUE) not in html and f"{KEY_VALUE:x}" not in html.lower()
    assert 'name="token_data"' not in html and 'name="status"' not in html  # read-only


def test_hypotheses_cannot_be_added_or_deleted_there(cast, scored):
    from django.contrib import admin
    from django.test import RequestFactory

    request = RequestFactory().get("/")
    request.user = user_create(username="su", password="su-pass-123", is_superuser=True)
    inlines = CheckAdmin(Check, admin.site).get_inline_instances(request, scored)
    assert [type(i).__name__ for i in inlines] == ["HypothesisInline"]
    assert not inlines[0].can_delete and not inlines[0].has_add_permission(request, scored)


def test_the_changelist_filters_by_status(admin_client, scored):
    done = admin_client.get("/admin/checks/check/?status__exact=done").content.decode()
    failed = admin_client.get("/admin/checks/check/?status__exact=failed").content.decode()
    assert str(scored.id) in done and str(scored.id) not in failed
