"""A text being checked while it streams: the e-process state between HTTP requests."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from provenance.accounts.models import Team
from provenance.keys.models import Tokenizer


class Stream(models.Model):
    # A random UUID: ids in URLs and API answers reveal nothing and cannot be guessed.
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="streams")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key_ids = models.JSONField(help_text="Ids of the keys tested, in order.")
    tokenizer = models.ForeignKey(Tokenizer, on_delete=models.PROTECT, related_name="+")
    threshold = models.FloatField()
    # detector.evidence.stream.EvidenceStream.to_bytes(): counters and seen contexts, no key value.
    state = models.BinaryField(editable=False)
    pending_text = models.TextField(blank=True)  # text whose last word may still grow
    # Every token id appended so far (little-endian uint32): the closed stream's final answer
    # is the detector's one decision on them (detector.decision.decide).
    token_ids = models.BinaryField(editable=False, default=b"")
    # That decision, once closed (``Decision.summary``); null while open.
    decision = models.JSONField(null=True, blank=True, editable=False)
    num_tokens = models.PositiveIntegerField(default=0)
    is_watermarked = models.BooleanField(default=False)
    closed = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        # The retention purge looks for streams by age on every sweeper pass.
        indexes = [models.Index(fields=["created_at"], name="stream_by_age")]

    def __str__(self) -> str:
        return f"stream {self.pk} ({self.num_tokens} tokens)"
