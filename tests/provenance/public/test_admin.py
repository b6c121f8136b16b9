"""The admin: publish and unpublish keys, partners with their usage log, revocation, and the
scrubbing loops stopped."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from provenance.public.models import Partner, ScrubEvent
from provenance.public.services import partner_create, usage_log


@pytest.fixture
def root_client(client, db):
    client.force_login(User.objects.create_superuser("root", "root@x.org", "root-pass-123"))
    return client


def test_the_publish_action_publishes_under_the_public_name(root_client, alice_key):
    alice_key.public_name = "Acme Assistant, 2026 models"
    alice_key.save()
    data = {"action": "publish_keys", "_selected_action": [str(alice_key.pk)]}
    assert root_client.post("/admin/keys/watermarkkey/", data).status_code == 302
    alice_key.refresh_from_db()
    assert alice_key.published_at is not None
    data["action"] = "unpublish_keys"
    root_client.post("/admin/keys/watermarkkey/", data)
    alice_key.refresh_from_db()
    assert alice_key.published_at is None


def test_a_partner_page_shows_its_usage_and_never_its_key(root_client):
    partner, key = partner_create(name="Newsroom")
    usage_log(partner, 200, "some text", "watermarked")
    page = root_client.get(f"/admin/public/partner/{partner.pk}/change/").content.decode()
    assert "Newsroom" in page and "watermarked" in page and key not in page
    assert partner.key_sha256 not in page


def test_the_revoke_action_revokes(root_client):
    partner, _ = partner_create(name="Gone")
    data = {"action": "revoke_partners", "_selected_action": [str(partner.pk)]}
    root_client.post("/admin/public/partner/", data)
    assert Partner.objects.get(pk=partner.pk).revoked_at is not None


def test_partners_are_added_only_by_the_command(root_client):
    assert root_client.get("/admin/public/partner/add/").status_code == 403


def test_scrubbing_events_are_listed_with_their_hashes(root_client):
    event = ScrubEvent.objects.create(family="c" * 64, variants=21, text_hashes=["d" * 64])
    page = root_client.get(f"/admin/public/scrubevent/{event.pk}/change/").content.decode()
    assert "d" * 64 in page
    assert root_client.get("/admin/public/partnerusage/").status_code == 200
