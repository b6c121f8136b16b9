"""Reads: the published key set."""

from __future__ import annotations

from typing import Any

from provenance.accounts.models import Team
from provenance.accounts.selectors import oracle_tier
from provenance.keys.selectors import exact_for
from provenance.reports.models import SigningKey


def jwks() -> dict[str, Any]:
    """Public halves of the signing keys that are not revoked, retired ones included (old
    reports verify); ``retired`` and ``revoked`` name the kids of each (a verifier says that
    a report was signed with a revoked key rather than only that it does not verify)."""
    keys = list(SigningKey.objects.order_by("created_at", "id"))
    return {
        "keys": [key.public_jwk for key in keys if key.revoked_at is None],
        "retired": [key.kid for key in keys if key.retired_at and key.revoked_at is None],
        "revoked": [key.kid for key in keys if key.revoked_at is not None],
    }


def report_tier(user: Any, check: Any) -> str:
    """The tier a check's report is signed at: the caller's, but basic (verdict and coarse
    p-values) when the check tested a key the caller's team does not own (``exact_for``)."""
    return oracle_tier(user) if exact_for(user, check.key_ids) else Team.OracleTier.BASIC
