"""Webhooks: a team's signing secret and default callback, and every delivery attempted."""

from __future__ import annotations

import uuid

from django.db import models

from provenance.accounts.models import Team


class TeamWebhook(models.Model):
    """A team's webhook settings. The secret signs every callback (HMAC-SHA256); it is stored
    encrypted under the KEK and shown once, when generated."""

    team = models.OneToOneField(Team, on_delete=models.CASCADE, related_name="webhook")
    default_url = models.URLField(
        max_length=500,
        blank=True,
        help_text="Called when an audit without its own callback_url finishes.",
    )
    encrypted_secret = models.BinaryField(editable=False)
    secret_created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"webhook of {self.team}"


class WebhookDelivery(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        DELIVERED = "delivered", "delivered"
        FAILED = "failed", "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="deliveries")
    # The audit may be deleted later; the delivery log stays.
    audit = models.ForeignKey(
        "audits.Audit", null=True, on_delete=models.SET_NULL, related_name="deliveries"
    )
    event = models.CharField(max_length=40)
    url = models.URLField(max_length=500)
    payload = models.JSONField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "webhook deliveries"

    def __str__(self) -> str:
        return f"{self.event} -> {self.url} ({self.status})"
