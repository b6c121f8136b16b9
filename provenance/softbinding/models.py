"""The manifest repository behind the soft binding resolution API: the C2PA manifest stores
this organization signed for its models' texts, each under its manifest's identifier."""

from __future__ import annotations

from django.db import models

from provenance.keys.models import WatermarkKey


class Manifest(models.Model):
    class Source(models.TextChoices):
        # Signed here, as a sidecar over an asset whose watermark named the key.
        RECOVERED = "recovered", "recovered"

    # The manifest's label (``urn:c2pa:<uuid>``): the resolution API's manifestId.
    id = models.CharField(primary_key=True, max_length=100)
    key = models.ForeignKey(WatermarkKey, on_delete=models.CASCADE, related_name="manifests")
    source = models.CharField(max_length=10, choices=Source.choices)
    store = models.BinaryField()  # application/c2pa: the manifest store, as signed
    media_type = models.CharField(max_length=100)  # of the asset it is bound to
    asset_sha256 = models.CharField(max_length=64)  # the asset is never kept, only its hash
    # A recovered manifest's requester, keyed (services.requester_tag):
    # another requester is never handed it, nor shown it by byBinding.
    requester = models.CharField(max_length=64, default="", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["key", "-created_at"], name="manifest_key_newest")]
        constraints = [
            models.UniqueConstraint(
                fields=["key", "source", "asset_sha256", "media_type", "requester"],
                name="one_manifest_per_asset_and_requester",
            )
        ]

    def __str__(self) -> str:
        return f"{self.id} ({self.source})"
