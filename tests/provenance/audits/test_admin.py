"""The audits' admin: list and change pages render for a superuser, the audit's bookkeeping
is read-only, and no text or key value is on the page."""

from __future__ import annotations

import pytest

from provenance.accounts.services import user_create
from provenance.audits.admin import AuditAdmin
from provenance.audits.services import audit_submit
from tests.provenance.conftest import KEY_VALUE

TEXT = "an essay the admin must not show"


@pytest.fixture
def admin_client(client, cast):
    root = user_create(username="root", password="root-pass-123", is_staff=True, is_superuser=True)
    client.force_login(root)
    return client


@pytest.fixture
def audit(cast, alice_key):
    return audit_submit(user=cast["alice"], texts=[{"text": TEXT}], idempotency_key="batch-7")[0]


def test_the_changelist_and_change_page_render_without_secrets(admin_client, audit):
    listing = admin_client.get("/admin/audits/audit/")
    assert listing.status_code == 200 and str(audit.id) in listing.content.decode()
    page = admin_client.get(f"/admin/audits/audit/{audit.id}/change/")
    html = page.content.decode()
    assert page.status_code == 200 and "batch-7" in html
    for shown in (listing.content.decode(), html):
        assert TEXT not in shown and str(KEY_VALUE) not in shown
        assert f"{KEY_VALUE:x}" not in shown.lower()
    assert 'name="status"' not in html and 'name="request_hash"' not in html  # read-only


def test_the_audits_admin_is_registered_with_the_bookkeeping_read_only():
    from django.contrib import admin

    from provenance.audits.models import Audit

    registered = admin.site._registry[Audit]
    assert isinstance(registered, AuditAdmin)
    assert {"request_hash", "status", "key_ids"} <= set(registered.readonly_fields)


def test_the_changelist_is_searched_by_idempotency_key(admin_client, audit):
    assert str(audit.id) in admin_client.get("/admin/audits/audit/?q=batch-7").content.decode()
    assert str(audit.id) not in admin_client.get("/admin/audits/audit/?q=batch-8").content.decode()
