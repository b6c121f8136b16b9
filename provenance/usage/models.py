"""The record of detector use: the detection log and the daily quota's counters. The log
names the check, audit or stream it records by label: the apps that write it sit above this
one."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from provenance.accounts.models import Team


class DetectionLog(models.Model):
    """Who checked what against which keys: the detector is an oracle for forging and
    scrubbing, so every use is recorded (text by hash; key ids and names, never values)."""

    class Kind(models.TextChoices):
        CHECK = "check", "check"
        AUDIT = "audit", "audit"
        DETECT = "detect", "detect (synchronous)"
        STREAM = "stream", "stream append"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    username = models.CharField(max_length=150)  # kept when the user row goes
    team = models.ForeignKey(Team, null=True, on_delete=models.SET_NULL, related_name="+")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    check_run = models.ForeignKey(
        "checks.Check", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    audit = models.ForeignKey(
        "audits.Audit", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    stream = models.ForeignKey(
        "streams.Stream", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    num_texts = models.PositiveIntegerField()
    text_sha256 = models.CharField(max_length=64, blank=True)
    key_ids = models.JSONField()
    key_names = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        db_table = "checks_detectionlog"  # created by the checks app; the rows stay where they are
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "created_at"])]

    def __str__(self) -> str:
        return f"{self.username} {self.kind} ({self.num_texts} text(s))"


class QuotaUsage(models.Model):
    """Texts a user submitted to the detector on one UTC day: the daily quota's counter,
    taken in the transaction that writes the request's detection-log row (the log stays the
    record of who checked what; this row makes the quota one statement whatever the day's
    volume, where summing the log grew with every request of the day)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    used = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "checks_quotausage"  # created by the checks app; the rows stay where they are
        constraints = [models.UniqueConstraint(fields=["user", "day"], name="quota_user_day")]

    def __str__(self) -> str:
        return f"{self.user_id} {self.day}: {self.used}"
