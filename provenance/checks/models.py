"""Checks (one text), their staged uploads and per-hypothesis results. An audit (a batch of
checks, ``provenance.audits``), the worker holding a check (``provenance.heartbeats``) and
the detection log (``provenance.usage``) are their own apps' models, named here by label."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from provenance.accounts.models import Team
from provenance.keys.models import Tokenizer, WatermarkKey


class Verdict(models.TextChoices):
    """``detector.evidence.power``'s three-way verdict (the detector decides; the row stores it)."""

    WATERMARKED = "watermarked", _("watermarked")
    NOT_WATERMARKED = "not_watermarked", _("not watermarked")
    INCONCLUSIVE = "inconclusive", _("inconclusive")


class Status(models.TextChoices):
    PENDING = "pending", _("pending")
    RUNNING = "running", _("running")
    DONE = "done", _("done")
    FAILED = "failed", _("failed")


class Reading(models.TextChoices):
    """A check's reading by a model (``detector.decision.text.decide_texts``): not needed or
    not possible, still to come (the stored verdict is the model-free stage's), done (the
    reading stage decided), or skipped (due and not taken: a budget, or no model could be
    loaded; the model-free verdict stands)."""

    NONE = "none", _("none")
    PENDING = "pending", _("pending")
    DONE = "done", _("done")
    SKIPPED = "skipped", _("skipped")


class Surface(models.TextChoices):
    """Where a single check was submitted (an audit's checks are told by their audit; the
    public verification and streams store no check row). Read by ``provenance.metrics``."""

    PAGE = "page", _("page")
    API = "api", _("API")


class Check(models.Model):
    # A random UUID: ids in URLs and API answers reveal nothing and cannot be guessed.
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="checks")
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="checks"
    )
    audit = models.ForeignKey(
        "audits.Audit", null=True, blank=True, on_delete=models.CASCADE, related_name="checks"
    )
    client_id = models.CharField(max_length=200, blank=True)
    # The uploaded document the text was extracted from (empty for pasted text and audit
    # items, whose client_id names their file). db_default: raw bulk inserts may omit it.
    filename = models.CharField(max_length=255, blank=True, default="", db_default="")
    # The page or the API (empty for an audit's items and for checks stored before it was
    # recorded); a bounded label of the operator's metrics, never shown to users.
    surface = models.CharField(
        max_length=10, choices=Surface.choices, blank=True, default="", db_default=""
    )
    # Submission order within an audit (ids are random, so they cannot order the items).
    position = models.PositiveIntegerField(default=0)
    # Emptied when the check is purged (retention) or deleted; the digest stays.
    text = models.TextField()
    text_sha256 = models.CharField(max_length=64, blank=True)
    key_ids = models.JSONField(help_text="Resolved hypotheses: ids of the keys tested.")
    threshold = models.FloatField()
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True
    )
    failure_reason = models.TextField(blank=True)
    # A document the worker refused to read: its stable code (``document_corrupt``...,
    # ``too_large``), empty for any other failure.
    failure_code = models.CharField(max_length=40, blank=True, default="", db_default="")
    # Family-wise verdict over num_hypotheses, corrected as ``correction`` names.
    num_hypotheses = models.PositiveIntegerField(null=True, blank=True)
    is_watermarked = models.BooleanField(null=True, blank=True)
    # Three-way (detector.evidence.power): watermarked, not_watermarked (a watermarked text of this
    # length and kind would have been detected with power >= 0.8) or inconclusive; and why.
    verdict = models.CharField(
        max_length=20, choices=Verdict.choices, blank=True, default="", db_default=""
    )
    verdict_reason = models.TextField(blank=True, default="", db_default="")
    # Scored tokens a watermarked text of this kind needs for 80% power (the page's reason).
    verdict_tokens_needed = models.PositiveIntegerField(null=True, blank=True)
    p_value = models.FloatField(null=True, blank=True)
    log10_p = models.FloatField(null=True, blank=True)
    num_tokens = models.PositiveIntegerField(null=True, blank=True)
    num_scored_tokens = models.PositiveIntegerField(null=True, blank=True)
    # "gamma" or "weighted" (model-assisted): the test the verdict rests on; "" until scored.
    decided_by = models.CharField(max_length=10, blank=True, default="", db_default="")
    # The reading by a model (Reading): "pending" while a worker reads a check the model-free
    # stage left undecided; the stored verdict is final once it is not "pending".
    reading = models.CharField(
        max_length=10, choices=Reading.choices, default=Reading.NONE, db_default=Reading.NONE
    )
    reading_ms = models.FloatField(null=True, blank=True)  # what the reading took
    # What the text's Content Credentials (C2PA) say, read when it is scored
    # (docs/c2pa.md: present, valid, trusted, signer, ...); null: scored before they were read.
    content_credentials = models.JSONField(null=True, blank=True)
    # The best key's measured false-positive rate when the check was scored
    # (provenance.keys.selectors.measured_fpr; null: not calibrated then): a later
    # calibration does not change what this answer says.
    key_measured_fpr = models.JSONField(null=True, blank=True)
    best_key = models.ForeignKey(
        WatermarkKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The decision's best hypothesis (its ``index``) and the family correction it applied, as
    # the detector decided them: pages and reports read these, never a minimum of their own.
    best_index = models.PositiveIntegerField(null=True, blank=True)
    correction = models.CharField(max_length=20, blank=True, default="", db_default="")
    # Heatmap of the best hypothesis: offsets, scores, scored mask, cumulative evidence.
    token_data = models.JSONField(null=True, blank=True)
    # The same for the result page, compact: context_width, chart, and "tokens", one string
    # of (gap, length, score in hundredths or -1) per token (provenance/lib/heatmap.py).
    # A 45k-token text's token_data is 1.5 MB of JSON; this parses in a millisecond.
    heatmap_compact = models.JSONField(null=True, blank=True)
    # Localized spans of every hypothesis (detector.evidence.localize): token and character offsets,
    # scored tokens, family-adjusted p-value, key id. Offsets only: kept after a purge.
    spans = models.JSONField(null=True, blank=True)  # null until scored
    created_at = models.DateTimeField(auto_now_add=True)
    # When the scoring task last reached the broker; empty while the broker was down.
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # Who holds a running check: the worker and the task message (its Celery id). A check
    # held by a dead worker is queued again; a redelivery of the same message may take it.
    # No database constraint: worker rows are bookkeeping, and a worker's claims must not
    # fail because its row was purged (its heartbeat writes it again).
    worker = models.ForeignKey(
        "heartbeats.Worker",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    claim = models.CharField(max_length=64, blank=True, db_default="")
    finished_at = models.DateTimeField(null=True, blank=True)
    scoring_ms = models.FloatField(null=True, blank=True)
    # Text and per-token data removed (retention period over, or deleted): the verdict,
    # p-values and text_sha256 remain. A deleted check is also hidden (404).
    purged_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # The purge looks for unpurged checks by age (a partial index stays small).
            models.Index(
                fields=["created_at"],
                condition=Q(purged_at__isnull=True),
                name="check_unpurged_by_age",
            ),
            models.Index(fields=["audit", "status"]),
            models.Index(fields=["audit", "position"]),
            # The sweeper looks for open checks by age.
            models.Index(fields=["status", "created_at"]),
            # Recovery looks for the running checks of dead workers.
            models.Index(fields=["status", "worker"]),
            # The operator's metrics read the checks written since their last scrape
            # (provenance.metrics.collector): ranges of these two columns.
            models.Index(fields=["created_at"], name="check_by_created"),
            models.Index(fields=["finished_at"], name="check_by_finished"),
        ]

    def __str__(self) -> str:
        return f"check {self.pk} ({self.status})"


class Upload(models.Model):
    """An uploaded file staged for a worker to read (the web process never parses one): the
    document of a check, or one file of an audit (a document, a zip, a CSV). Deleted once
    read, with the check or audit it belongs to, or by the sweeper when left over."""

    class Kind(models.TextChoices):
        DOCUMENT = "document", "document"
        ARCHIVE = "archive", "zip archive"
        TABLE = "table", "CSV file"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    check_run = models.OneToOneField(
        Check, null=True, blank=True, on_delete=models.CASCADE, related_name="upload"
    )
    audit = models.ForeignKey(
        "audits.Audit", null=True, blank=True, on_delete=models.CASCADE, related_name="uploads"
    )
    position = models.PositiveIntegerField(default=0)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    filename = models.CharField(max_length=255)
    content = models.BinaryField()
    # A CSV's columns (text_column, id_column), as the form named them.
    options = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # An audit's upload (read by its own task): when the task reached the broker, and when a
    # worker began reading it (the sweeper publishes it again when lost).
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["audit", "position"]
        indexes = [models.Index(fields=["audit", "position"])]

    def __str__(self) -> str:
        return f"upload {self.pk} ({self.kind})"


class Hypothesis(models.Model):
    """One (key x tokenizer) test of a check's text."""

    check_run = models.ForeignKey(Check, on_delete=models.CASCADE, related_name="hypotheses")
    index = models.PositiveIntegerField()
    key = models.ForeignKey(WatermarkKey, null=True, on_delete=models.SET_NULL, related_name="+")
    key_name = models.CharField(max_length=100)
    tokenizer = models.ForeignKey(Tokenizer, null=True, on_delete=models.SET_NULL, related_name="+")
    tokenizer_name = models.CharField(max_length=100)
    algorithm = models.CharField(max_length=20)
    score = models.FloatField()
    num_tokens = models.PositiveIntegerField()
    num_scored_tokens = models.PositiveIntegerField()
    p_value = models.FloatField()
    log10_p = models.FloatField()
    adjusted_log10_p = models.FloatField()
    # The hypothesis's own decision p-value before the family correction
    # (detector.decision.decide: global test and span scan, with the weighted test when a
    # model read the text); null for checks scored before it was stored.
    decision_log10_p = models.FloatField(null=True, blank=True)
    # The model-assisted test, when the tokenizer's model read the text (else null).
    weighted_log10_p = models.FloatField(null=True, blank=True)
    # Scored tokens the model-assisted test set aside because a suspected edit (a token the
    # model reads as very unlikely) touches them; null without the model.
    weighted_suspected = models.PositiveIntegerField(null=True, blank=True)
    decided_by = models.CharField(max_length=10, blank=True, default="", db_default="")
    # The reading stage's share of the level was set aside for it (its text was or may be
    # read): its decision p-value is the model-free one over 1 - READING_SHARE
    # (detector.decision.rule.with_weighted); the signed report carries it.
    reading_reserved = models.BooleanField(default=False, db_default=False)
    # Content hash of the n-gram table that left the pairs common in human text unscored
    # (detector.text.ngrams), "" when none applied, null when scored before it was recorded: the
    # signed report names it, so a re-verification after a table rebuild cannot silently
    # recompute other numbers.
    ngram_table = models.CharField(max_length=64, null=True, blank=True)

    class Meta:
        ordering = ["check_run", "index"]
        constraints = [
            models.UniqueConstraint(fields=["check_run", "index"], name="unique_hypothesis_index")
        ]

    def __str__(self) -> str:
        return f"{self.key_name} x {self.tokenizer_name}"
