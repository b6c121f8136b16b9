"""Webhook rows: one webhook per team, deliveries named by event, target and status."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from provenance.webhooks.models import TeamWebhook, WebhookDelivery
from provenance.webhooks.services import webhook_secret_rotate
from tests.provenance.webhooks.hooks import delivery_row

pytestmark = pytest.mark.django_db


def test_a_team_has_at_most_one_webhook_and_its_secret_is_not_in_clear(cast):
    webhook, secret = webhook_secret_rotate(team=cast["acme"])
    assert str(webhook) == "webhook of acme"
    assert secret.encode() not in bytes(webhook.encrypted_secret)
    again, newer = webhook_secret_rotate(team=cast["acme"])
    assert again.pk == webhook.pk and newer != secret
    with pytest.raises(IntegrityError), transaction.atomic():
        TeamWebhook.objects.create(team=cast["acme"], encrypted_secret=b"x")


def test_a_delivery_starts_pending_and_names_its_target(cast):
    delivery = delivery_row(cast, "https://93.184.216.34/hook")
    assert (delivery.status, delivery.attempts) == ("pending", 0)
    assert str(delivery) == "audit.finished -> https://93.184.216.34/hook (pending)"
    newer = delivery_row(cast, "https://93.184.216.34/other")
    assert list(WebhookDelivery.objects.all()) == [newer, delivery]
    assert WebhookDelivery._meta.verbose_name_plural == "webhook deliveries"
