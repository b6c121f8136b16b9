"""Public verification's rows: registered partners (their key stored only as a SHA-256), each
partner's usage log, and the scrubbing loops the near-duplicate guard stopped."""

from __future__ import annotations

from django.db import models


class Partner(models.Model):
    """A regulator, fact-checker or platform that checks without a proof of work, under a
    budget of its own. The key is shown once by ``manage.py public_partner_create``."""

    name = models.CharField(max_length=200, unique=True)
    key_sha256 = models.CharField(max_length=64, unique=True, editable=False)
    # Checks a minute; null: PROVENANCE_PUBLIC_PARTNER_PER_MIN.
    per_minute = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name + (" (revoked)" if self.revoked_at else "")

    def __repr__(self) -> str:
        return f"<Partner id={self.pk} name={self.name!r}>"


class PartnerUsage(models.Model):
    """One check a partner asked for: when, the text's SHA-256 and what it was answered."""

    partner = models.ForeignKey(Partner, on_delete=models.CASCADE, related_name="usage")
    at = models.DateTimeField(auto_now_add=True)
    text_sha256 = models.CharField(max_length=64, blank=True)
    status_code = models.PositiveSmallIntegerField()
    verdict = models.CharField(max_length=20, blank=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.partner.name} {self.at:%Y-%m-%d %H:%M:%S} {self.status_code}"


class ScrubEvent(models.Model):
    """A family of near-duplicate texts that reached the variant limit: answers for it stop
    for the rest of the window. ``text_hashes``: the SHA-256 of every variant seen."""

    family = models.CharField(max_length=64)
    variants = models.PositiveIntegerField()
    text_hashes = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"scrubbing loop {self.family[:12]} ({self.variants} variants)"
