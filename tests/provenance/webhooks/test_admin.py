"""The webhook admin: the signing secret shown once (then only rotated), deliveries listed
read-only."""

from __future__ import annotations

import pytest

from provenance.webhooks.models import TeamWebhook, WebhookDelivery
from provenance.webhooks.tasks import webhook_deliver_task
from tests.provenance.webhooks.hooks import delivery_row, finished_audit

pytestmark = pytest.mark.django_db


def test_the_secret_is_shown_once_in_the_admin_and_never_stored_in_clear(admin_client, cast):
    response = admin_client.post(
        "/admin/webhooks/teamwebhook/add/", {"team": cast["acme"].id, "default_url": ""}
    )
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    page = response.content.decode()
    secret = page.split('id="webhook-secret">')[1].split("<")[0]
    assert secret.startswith("whsec_")
    webhook = TeamWebhook.objects.get(team=cast["acme"])
    assert secret.encode() not in bytes(webhook.encrypted_secret)
    change = admin_client.get(f"/admin/webhooks/teamwebhook/{webhook.id}/change/")
    assert secret not in change.content.decode()


def test_deliveries_are_listed_in_the_admin(
    admin_client, api_for, alice_key, human_text, receiver, allow_local, secret
):
    audit = finished_audit(api_for, [human_text], callback_url=receiver.url)
    webhook_deliver_task.apply(args=[str(WebhookDelivery.objects.get(audit=audit).id)])
    page = admin_client.get("/admin/webhooks/webhookdelivery/").content.decode()
    assert receiver.url in page and "delivered" in page


def test_the_rotate_action_shows_a_new_secret_once(admin_client, cast, secret):
    webhook = TeamWebhook.objects.get(team=cast["acme"])
    before = bytes(webhook.encrypted_secret)
    response = admin_client.post(
        "/admin/webhooks/teamwebhook/",
        {"action": "rotate_secret", "_selected_action": [webhook.pk]},
    )
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    shown = response.content.decode().split('id="webhook-secret">')[1].split("<")[0]
    assert shown.startswith("whsec_") and shown != secret
    assert bytes(TeamWebhook.objects.get(pk=webhook.pk).encrypted_secret) != before


def test_a_delivery_cannot_be_added_or_edited(admin_client, cast):
    delivery = delivery_row(cast, "https://93.184.216.34/hook")
    assert admin_client.get("/admin/webhooks/webhookdelivery/add/").status_code == 403
    page = admin_client.get(f"/admin/webhooks/webhookdelivery/{delivery.pk}/change/")
    assert page.status_code == 200 and 'name="url"' not in page.content.decode()
