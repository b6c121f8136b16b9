"""Teams: the unit that owns keys, checks and audits. A user belongs to at most one team."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models


class Team(models.Model):
    class OracleTier(models.TextChoices):
        # The detector is an oracle for scrubbing and forging: exact p-values and per-token
        # scores tell an attacker which edits remove the watermark. Only auditors get them.
        AUDITOR = "auditor", "auditor (per-token scores, heatmap, exact p-values)"
        BASIC = "basic", "basic (verdict, spans, p rounded down to its power of ten)"

    name = models.CharField(max_length=100, unique=True)
    oracle_tier = models.CharField(
        max_length=10, choices=OracleTier.choices, default=OracleTier.BASIC
    )
    # Days a submitted text is kept (empty: PROVENANCE_RETENTION_DAYS). A team may only
    # shorten the deployment's period: the effective value is the smaller of the two.
    retention_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Days texts are kept; empty: the default (the shorter wins).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    # One team per user keeps "the submitter's team" unambiguous for every check.
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="membership"
    )
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    # A team admin may delete any check or audit of the team (members only their own).
    is_admin = models.BooleanField(default=False)
    joined_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.user} in {self.team}"


class ExternalIdentity(models.Model):
    """A user who signs in through the organization's OpenID Connect provider, known by the
    provider's stable subject identifier (never matched by e-mail)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="external_identity"
    )
    subject = models.CharField(max_length=255, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # The provider's refresh token of the last sign-in, under the KEK: with it the provider is
    # asked, between sign-ins, whether it still knows the user (``accounts.identities``).
    encrypted_refresh_token = models.BinaryField(null=True, editable=False)
    checked_at = models.DateTimeField(null=True, blank=True)  # last sign-in or confirmation try
    confirmed_at = models.DateTimeField(null=True, blank=True)  # last the provider answered yes

    def __str__(self) -> str:
        return f"{self.user} (OpenID Connect)"
