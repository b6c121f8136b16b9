"""Conversations with the watermarking generator; every reply keeps how it was made."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils.translation import gettext

from provenance.accounts.models import Team
from provenance.keys.models import WatermarkKey


class Conversation(models.Model):
    # A random UUID: ids in URLs and API answers reveal nothing and cannot be guessed.
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="conversations")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations"
    )
    title = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        permissions = [("use_playground", "Can chat with the watermarking generator")]

    def __str__(self) -> str:
        return self.title or gettext("conversation %(id)s") % {"id": self.pk}


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user", "user"
        ASSISTANT = "assistant", "assistant"

    class Status(models.TextChoices):
        STREAMING = "streaming", "streaming"
        DONE = "done", "done"
        STOPPED = "stopped", "stopped"  # the user stopped it: the partial reply is kept
        FAILED = "failed", "failed"

    # A random UUID: ids in URLs and API answers reveal nothing and cannot be guessed.
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages"
    )
    role = models.CharField(max_length=10, choices=Role.choices)
    content = models.TextField(blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DONE)
    error = models.TextField(blank=True)
    # Provenance of an assistant reply: the key by registry row and by name (the row may go),
    # the generator's own report of model and tokenizer, and the sampling settings asked for.
    key = models.ForeignKey(
        WatermarkKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    key_name = models.CharField(max_length=100, blank=True)
    generator_key = models.CharField(max_length=200, blank=True)
    watermarked = models.BooleanField(null=True, blank=True)
    model = models.CharField(max_length=200, blank=True)
    tokenizer_hash = models.CharField(max_length=64, blank=True)
    temperature = models.FloatField(null=True, blank=True)
    top_p = models.FloatField(null=True, blank=True)
    max_tokens = models.PositiveIntegerField(null=True, blank=True)
    token_ids = models.JSONField(default=list, blank=True)
    # True when the generator sent the ids; False when they were re-tokenized from the text.
    token_ids_exact = models.BooleanField(default=False)
    finish_reason = models.CharField(max_length=20, blank=True)
    log10_p = models.FloatField(null=True, blank=True)  # the meter's last reading
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # Ids are random: creation time orders the turns (one insert each, never equal).
        ordering = ["conversation", "created_at"]
        # The retention purge looks for messages by age on every sweeper pass.
        indexes = [models.Index(fields=["created_at"], name="message_by_age")]

    def __str__(self) -> str:
        return f"{self.role} message {self.pk}"
