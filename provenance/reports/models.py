"""The deployment's report-signing keys (Ed25519). The private half is stored only encrypted
under the KEK, like the watermark keys; public halves stay published after a rotation so that
old reports still verify."""

from __future__ import annotations

from django.db import models


class SigningKey(models.Model):
    kid = models.CharField(max_length=64, unique=True)  # RFC 7638 thumbprint
    public_jwk = models.JSONField()
    # Fernet token of the private JWK's JSON; never rendered, never serialized.
    encrypted_private = models.BinaryField(editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    retired_at = models.DateTimeField(null=True, blank=True)
    # Revoked (the private half leaked, say): dropped from the JWKS and named as revoked, so
    # reports it signed no longer verify; a retired key stays published.
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        state = "revoked" if self.revoked_at else "retired" if self.retired_at else "active"
        return f"signing key {self.kid} ({state})"

    def __repr__(self) -> str:
        return f"<SigningKey kid={self.kid!r}>"
