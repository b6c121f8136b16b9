"""Reads: the published key set."""

from __future__ import annotations

from typing import Any

from provenance.reports.models import SigningKey


def jwks() -> dict[str, Any]:
    """Public halves of every signing key, retired ones included (old reports verify)."""
    return {"keys": [key.public_jwk for key in SigningKey.objects.order_by("created_at", "id")]}
