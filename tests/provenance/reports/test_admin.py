"""The signing-key admin: read-only, and never the private half."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User

from provenance.lib.crypto import decrypt_bytes
from provenance.reports.models import SigningKey
from provenance.reports.services import signing_key_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def root_client(client):
    client.force_login(User.objects.create_superuser("root", "root@x.org", "root-pass-123"))
    return client


def test_the_key_list_and_page_show_the_kid_and_no_private_half(root_client):

    key = signing_key_create()
    private = json.loads(decrypt_bytes(bytes(key.encrypted_private)))["d"]
    listing = root_client.get("/admin/reports/signingkey/")
    assert listing.status_code == 200 and key.kid in listing.content.decode()
    page = root_client.get(f"/admin/reports/signingkey/{key.pk}/change/")
    assert page.status_code == 200 and key.kid in page.content.decode()
    for answer in (listing, page):
        assert private not in answer.content.decode()
        assert bytes(key.encrypted_private).decode() not in answer.content.decode()


def test_keys_cannot_be_added_or_edited_there(root_client):
    key = signing_key_create()
    assert root_client.get("/admin/reports/signingkey/add/").status_code == 403
    root_client.post(f"/admin/reports/signingkey/{key.pk}/change/", {"kid": "forged"})
    assert SigningKey.objects.get(pk=key.pk).kid == key.kid
