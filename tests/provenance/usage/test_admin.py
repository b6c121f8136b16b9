"""The detection log's admin: it lists who checked what for a superuser, shows a text's hash
and never its text, and no one may add, edit or delete an entry."""

from __future__ import annotations

import hashlib

import pytest

from provenance.accounts.services import user_create
from provenance.checks.services import check_create
from provenance.usage.admin import DetectionLogAdmin
from provenance.usage.models import DetectionLog
from tests.provenance.conftest import KEY_VALUE

TEXT = "a distinctive sentence that the log must not repeat"


@pytest.fixture
def admin_client(client, cast):
    root = user_create(username="root", password="root-pass-123", is_staff=True, is_superuser=True)
    client.force_login(root)
    return client


@pytest.fixture
def entry(cast, alice_key):
    check_create(user=cast["alice"], text=TEXT)
    return DetectionLog.objects.get()


def test_the_log_lists_its_entries_without_the_text_or_a_key(admin_client, entry):
    listing = admin_client.get("/admin/usage/detectionlog/")
    html = listing.content.decode()
    assert listing.status_code == 200 and "alice" in html and "acme-main" in html
    page = admin_client.get(f"/admin/usage/detectionlog/{entry.id}/change/").content.decode()
    assert hashlib.sha256(TEXT.encode()).hexdigest() in page
    for shown in (listing.content.decode(), page):
        assert TEXT not in shown and str(KEY_VALUE) not in shown


def test_an_entry_cannot_be_added_changed_or_deleted(admin_client, entry):
    assert admin_client.get("/admin/usage/detectionlog/add/").status_code == 403
    page = admin_client.get(f"/admin/usage/detectionlog/{entry.id}/change/")
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    changed = admin_client.post(
        f"/admin/usage/detectionlog/{entry.id}/change/", {"username": "mallory"}
    )
    assert changed.status_code == 403
    deleted = admin_client.post(f"/admin/usage/detectionlog/{entry.id}/delete/", {"post": "yes"})
    assert deleted.status_code == 403
    assert DetectionLog.objects.get(id=entry.id).username == "alice"


def test_the_logs_admin_is_this_read_only_one(rf, entry):
    from django.contrib import admin

    registered = admin.site._registry[DetectionLog]
    assert isinstance(registered, DetectionLogAdmin)
    request = rf.get("/")
    assert not registered.has_add_permission(request)
    assert not registered.has_change_permission(request, entry)
    assert not registered.has_delete_permission(request, entry)


def test_the_log_is_searched_by_user(admin_client, entry):
    assert "acme-main" in admin_client.get("/admin/usage/detectionlog/?q=alice").content.decode()
    assert "acme-main" not in admin_client.get("/admin/usage/detectionlog/?q=bob").content.decode()


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("/admin/checks/detectionlog/", "/admin/usage/detectionlog/"),
        ("/admin/checks/detectionlog/?kind=check", "/admin/usage/detectionlog/?kind=check"),
        ("/admin/checks/audit/", "/admin/audits/audit/"),
    ],
)
def test_the_admin_pages_from_before_the_models_moved_lead_to_their_new_place(
    admin_client, old, new
):
    answer = admin_client.get(old)
    assert answer.status_code == 302 and answer["Location"] == new
    assert admin_client.get(new).status_code == 200
