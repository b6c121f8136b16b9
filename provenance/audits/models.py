"""An audit: a batch of checks submitted together (its checks are ``provenance.checks``'
rows pointing here)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from provenance.accounts.models import Team
from provenance.checks.models import Status


class Audit(models.Model):
    # A random UUID: ids in URLs and API answers reveal nothing and cannot be guessed.
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="audits")
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="audits"
    )
    idempotency_key = models.CharField(max_length=200, blank=True)
    # sha256 of the canonical request: a replay with the same Idempotency-Key must match.
    request_hash = models.CharField(max_length=64)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    num_texts = models.PositiveIntegerField()
    key_ids = models.JSONField(help_text="Resolved hypotheses: ids of the keys tested.")
    threshold = models.FloatField()
    # Called with the audit's summary when it finishes (empty: the team's default, if any).
    callback_url = models.URLField(max_length=500, blank=True, default="", db_default="")
    # An upload the workers refused (a file that cannot be read, a limit): the audit is then
    # failed with no texts. ``failure_code`` is the first refusal's stable code
    # (``document_corrupt``...), ``refusals`` every one: code, filename, message, column, row.
    failure_code = models.CharField(max_length=40, blank=True, default="", db_default="")
    failure_reason = models.TextField(blank=True, default="", db_default="")
    refusals = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Deleted by its submitter or a team admin: the row stays for the detection log, hidden
    # from every page and API answer; its checks are purged.
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "checks_audit"  # created by the checks app; the rows stay where they are
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["team", "idempotency_key"],
                condition=~Q(idempotency_key=""),
                name="unique_audit_idempotency_key_per_team",
            )
        ]

    def __str__(self) -> str:
        return f"audit {self.pk} ({self.num_texts} texts, {self.status})"
