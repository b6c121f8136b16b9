"""Receipts of public verification: a compact JWS (Ed25519, the signed reports' keys and
JWKS) over the answer a public verifier gave, so that a third party can show what it was told.

The payload holds only what the public answer held: the text's SHA-256, the three-way
verdict, the published model it names, the coarse strength (the corrected p-value's power of
ten, floored; null unless watermarked), the tokens scored, the models tested and the time.
No score, no exact p-value, no token position, no key value.
"""

from __future__ import annotations

from typing import Any

from detector.reports.signed import ReportError, Verified, header_typ, sign, verify_typed

SCHEMA = "provenance.receipt/v1"
TYP = "provenance-receipt+jws"
FIELDS = frozenset(
    {"schema", "issuer", "text", "verdict", "model", "strength", "tokens_scored", "models", "at"}
)
VERDICTS = frozenset({"watermarked", "not_watermarked", "inconclusive"})


def sign_receipt(payload: dict[str, Any], private_jwk: dict[str, Any]) -> str:
    """The compact JWS of a receipt payload (``schema`` set here)."""
    body = {**payload, "schema": SCHEMA}
    if set(body) != FIELDS:
        raise ValueError(f"a receipt holds exactly {sorted(FIELDS)}")
    return sign(body, private_jwk, typ=TYP)


def verify_receipt(token: str, jwks: dict[str, Any]) -> Verified:
    """Check a receipt's signature against the issuer's key set; return its payload
    (ReportError when the signature, the type, the schema or the fields are wrong)."""
    verified = verify_typed(token, jwks, TYP, SCHEMA, "receipt")
    payload = verified.payload
    if set(payload) != FIELDS:
        raise ReportError("the receipt's fields are not a receipt's")
    if payload["verdict"] not in VERDICTS:
        raise ReportError(f"unknown verdict {payload['verdict']!r}")
    return verified


def is_receipt(token: str) -> bool:
    """Whether a compact JWS says (unverified) that it is a receipt, not a report."""
    return header_typ(token) == TYP
