"""The registry: tokenizers and watermark keys. Key values are stored encrypted only."""

from __future__ import annotations

import secrets
import uuid

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from detector.core.config import (
    ALGORITHMS,
    DEFAULT_ALGORITHM,
    DEFAULT_ALPHA,
    DEFAULT_CONTEXT_WIDTH,
    MAX_CONTEXT_WIDTH,
    KeyConfig,
)
from provenance.accounts.models import Team


class Tokenizer(models.Model):
    class Source(models.TextChoices):
        DEFAULT = "default", "Embedded SmolLM2 (default)"
        HF_DIR = "hf_dir", "Local Hugging Face directory"
        GGUF = "gguf", "GGUF file"
        BUILTIN = "builtin", "Built-in (mistral-v3, mistral-tekken)"
        UPLOAD = "upload", "Uploaded tokenizer.json"

    name = models.CharField(max_length=100, unique=True)
    source_kind = models.CharField(max_length=16, choices=Source.choices, default=Source.DEFAULT)
    # Empty for the embedded default; a local directory or .gguf path; a built-in's name; for
    # an upload, its directory relative to the data dir (uploads/<sha256 of the file>).
    source_path = models.CharField(max_length=500, blank=True)
    content_hash = models.CharField(max_length=64, editable=False)
    vocab_size = models.PositiveIntegerField(editable=False)
    # The tokenizer's model, for model-assisted detection on the workers: a local Hugging Face
    # causal LM directory, EMBEDDED_MODEL for the converted embedded SmolLM2, or empty (none).
    model_path = models.CharField(
        max_length=500,
        blank=True,
        default="",
        db_default="",
        help_text=(
            "A local Hugging Face model directory of this tokenizer's model (config.json and "
            "weights): checks then also run the model-assisted test on the workers. Empty: "
            "none. “embedded”: the converted embedded SmolLM2."
        ),
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def source(self) -> str:
        """The argument that detector.text.tokenizers.load_tokenizer expects."""
        if self.source_kind == self.Source.DEFAULT:
            return "default"
        if self.source_kind == self.Source.UPLOAD:
            return str(settings.DATA_DIR / "tokenizers" / self.source_path)
        return self.source_path

    @property
    def has_model(self) -> bool:
        return bool(self.model_path)


def new_public_id() -> str:
    """A key's public identifier: 16 random bytes, URL-safe."""
    return "pk-" + secrets.token_urlsafe(16)


class WatermarkKey(models.Model):
    # The detector's algorithms (detector.core.config.ALGORITHMS), each labelled by its name.
    ALGORITHM_CHOICES = [(name, name) for name in ALGORITHMS]

    class Status(models.TextChoices):
        ACTIVE = "active", _("active")
        # Retired keys no longer mark new text but still detect old text.
        RETIRED = "retired", _("retired")

    # A random UUID: ids in URLs and API answers reveal nothing and cannot be guessed.
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=100)
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="keys")
    shared = models.BooleanField(default=False, help_text="Usable by checks of every team.")
    algorithm = models.CharField(
        max_length=20, choices=ALGORITHM_CHOICES, default=DEFAULT_ALGORITHM
    )
    alpha = models.FloatField(
        default=DEFAULT_ALPHA, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    context_width = models.PositiveSmallIntegerField(
        default=DEFAULT_CONTEXT_WIDTH,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_CONTEXT_WIDTH)],
    )
    deduplicate = models.BooleanField(default=True)
    tokenizer = models.ForeignKey(Tokenizer, on_delete=models.PROTECT, related_name="keys")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    # Fernet token of the decimal key value; never rendered, never serialized.
    encrypted_value = models.BinaryField(editable=False)
    rotated_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="rotations"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    retired_at = models.DateTimeField(null=True, blank=True)
    # Public verification (provenance.public): a published key is tested by the public
    # endpoint under its public name; its value never leaves, as for every key.
    public_name = models.CharField(max_length=200, blank=True, default="", db_default="")
    published_at = models.DateTimeField(null=True, blank=True)
    # Content Credentials (docs/c2pa.md): the key's public identifier, which the manifests of
    # its replies name as their soft binding's value (random: it reveals nothing of the key,
    # its id or its team), and whether the playground's generator signs its replies.
    public_id = models.CharField(max_length=40, unique=True, default=new_public_id, editable=False)
    content_credentials = models.BooleanField(
        default=False,
        help_text="The generator signs this key's replies with a C2PA manifest.",
    )

    class Meta:
        ordering = ["team__name", "name"]
        # Sharing puts a hypothesis into every team's family: a permission of its own.
        permissions = [("share_watermarkkey", "Can share a watermark key with every team")]
        constraints = [
            models.UniqueConstraint(fields=["team", "name"], name="unique_key_name_per_team")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.algorithm}, {self.status})"

    def __repr__(self) -> str:
        return f"<WatermarkKey id={self.pk} name={self.name!r}>"


def registry_config(
    *,
    value: int,
    algorithm: str,
    alpha: float,
    context_width: int,
    deduplicate: bool,
    name: str | None = None,
) -> KeyConfig:
    """The one key model for a registry row's settings (ValueError when they are invalid).

    ``deduplicate`` is upstream's ``deduplicate_contexts``: ``"single_turn"`` when on, ``"none"``
    when off. Repeats are searched over the whole history (``max_history`` None): detection of
    any text, and generation of the playground's replies, which are far shorter than
    upstream's 8192-position default bound.
    """
    return KeyConfig(
        key=value,
        algorithm=algorithm,  # type: ignore[arg-type]  # KeyConfig checks it
        alpha=alpha,
        context_width=context_width,
        deduplicate_contexts="single_turn" if deduplicate else "none",
        deduplicate_contexts_max_history=None,
        name=name,
    )


class KeyCalibration(models.Model):
    """One measurement of a key on human text (and, where its tokenizer has a model, of its
    power on generated text). A job row: the calibration task owns its status."""

    class Status(models.TextChoices):
        PENDING = "pending", _("pending")
        RUNNING = "running", _("running")
        DONE = "done", _("done")
        FAILED = "failed", _("failed")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    key = models.ForeignKey(WatermarkKey, on_delete=models.CASCADE, related_name="calibrations")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    failure_reason = models.CharField(max_length=300, blank=True)
    threshold = models.FloatField()
    texts_per_genre = models.PositiveIntegerField()
    chunk_tokens = models.PositiveIntegerField()
    # The power measurement's size: prompts per temperature and tokens per text (0: skipped).
    power_prompts = models.PositiveIntegerField(default=0)
    power_tokens = models.PositiveIntegerField(default=0)
    # Per temperature ("1.0", "0.7"): the settings, the measured points and the tokens needed
    # for 80% power (null: more than were generated). Empty when not measured.
    power = models.JSONField(default=dict, blank=True)
    power_note = models.CharField(max_length=300, blank=True)
    # The model-assisted decision's rate on a bounded sample per genre, when model
    # assistance is on and the tokenizer has a model ({"genres": {genre: {texts, flagged,
    # rate, ci_low, ci_high, above_threshold}}, "note"}); {"note": why not} otherwise.
    assisted = models.JSONField(default=dict, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"calibration of {self.key.name} ({self.status})"

    def tokens_needed(self, temperature: float) -> int | None:
        entry = self.power.get(f"{temperature:.1f}")
        return None if entry is None else entry.get("tokens_needed")


class GenreRate(models.Model):
    """A key's realized false-positive rate on one genre of human text."""

    calibration = models.ForeignKey(KeyCalibration, on_delete=models.CASCADE, related_name="rates")
    genre = models.CharField(max_length=20)
    corpus = models.CharField(max_length=300)
    texts = models.PositiveIntegerField()
    flagged = models.PositiveIntegerField()
    rate = models.FloatField()
    # The two-sided 95% Clopper-Pearson interval of the rate.
    ci_low = models.FloatField()
    ci_high = models.FloatField()
    # The interval lies wholly above the threshold: more human text flagged than promised.
    above_threshold = models.BooleanField(default=False)

    class Meta:
        ordering = ["calibration", "id"]
        constraints = [
            models.UniqueConstraint(fields=["calibration", "genre"], name="one_rate_per_genre")
        ]

    def __str__(self) -> str:
        return f"{self.genre}: {self.flagged}/{self.texts}"
