"""Signed reports of checks and audit items, and the signing keys behind them.

The payload is built from what the check stored (the web layer does not decide again) and
signed by ``detector.reports.signed``; the private key is decrypted only for the signature.
"""

from __future__ import annotations

import json
import math
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

import detector
from detector.reports import signed as report
from provenance.accounts.models import Team
from provenance.checks import tiers
from provenance.checks.models import Check, Hypothesis, Status
from provenance.errors import Conflict
from provenance.lib import rowcache
from provenance.lib.crypto import decrypt_bytes, encrypt_bytes
from provenance.reports.models import SigningKey


def signing_key_create() -> SigningKey:
    key = report.generate_signing_key()
    if key.kid is None:  # generate_signing_key asks for one (auto_kid)
        raise RuntimeError("the new signing key has no kid")
    private = json.dumps(key.as_dict(private=True)).encode()
    return SigningKey.objects.create(
        kid=key.kid,
        public_jwk=key.as_dict(private=False),
        encrypted_private=encrypt_bytes(private),
    )


def signing_key_active() -> SigningKey:
    """The newest unretired signing key, created on first use. Every public answer and report
    is signed: the row is read through the row cache (``provenance.lib.rowcache``, no ORM
    compilation; read on every call, so a rotation or revocation in any process is seen by
    the next). The returned key is shared by the process's threads: read it, never change it."""
    found = rowcache.validated(
        ("signing_key_active",), lambda: SigningKey.objects.filter(retired_at__isnull=True)[:1]
    )
    if found:
        return found[0]
    with transaction.atomic():
        active = SigningKey.objects.filter(retired_at__isnull=True).first()
        return active if active is not None else signing_key_create()


@transaction.atomic
def signing_key_rotate() -> SigningKey:
    """A new signing key; the old ones stop signing but stay published (old reports verify)."""
    SigningKey.objects.filter(retired_at__isnull=True).update(retired_at=timezone.now())
    return signing_key_create()


@transaction.atomic
def signing_key_revoke(kid: str) -> SigningKey:
    """Revoke a signing key: it signs nothing more and leaves the JWKS, so the reports it
    signed stop verifying. Revoking the active key starts a new one."""
    key = SigningKey.objects.select_for_update().filter(kid=kid).first()
    if key is None:
        raise Conflict(f"no signing key {kid!r}")
    now = timezone.now()
    key.revoked_at = key.revoked_at or now
    key.retired_at = key.retired_at or now
    key.save(update_fields=["revoked_at", "retired_at"])
    if not SigningKey.objects.filter(retired_at__isnull=True).exists():
        signing_key_create()
    return key


def _rounded(log10_p: float | None) -> float | None:
    """Basic tier: p rounded down to its power of ten (no more digits for an oracle)."""
    return None if log10_p is None else float(math.floor(log10_p))


def _hypothesis(h: Hypothesis, basic: bool) -> dict[str, Any]:
    key, tok = h.key, h.tokenizer
    entry: dict[str, Any] = {
        "index": h.index,
        "key": {"id": str(h.key_id) if h.key_id else None, "name": h.key_name},
        "tokenizer": {"name": h.tokenizer_name, "content_hash": tok.content_hash if tok else None},
        "algorithm": h.algorithm,
        "alpha": key.alpha if key else None,
        "context_width": key.context_width if key else None,
        "deduplication": (
            None if key is None else report.DEDUP_RULE if key.deduplicate else "none"
        ),
        "num_tokens": h.num_tokens,
        "num_scored_tokens": h.num_scored_tokens,
        "score": None if basic else h.score,
        "p_value": None if basic else h.p_value,
        "log10_p": _rounded(h.log10_p) if basic else h.log10_p,
        "adjusted_log10_p": _rounded(h.adjusted_log10_p) if basic else h.adjusted_log10_p,
        # the detector's decision for this hypothesis (before the family correction), the
        # test it rests on, and the model-assisted test's p when a model read the text
        "decision_log10_p": (_rounded(h.decision_log10_p) if basic else h.decision_log10_p),
        "reading_reserved": h.reading_reserved,
        "decided_by": h.decided_by or None,
        "weighted_log10_p": _rounded(h.weighted_log10_p) if basic else h.weighted_log10_p,
    }
    if h.ngram_table is not None:  # null: scored before the table was recorded
        entry[report.NGRAM_TABLE] = h.ngram_table or None
    if basic:
        entry["p_rounded"] = True
    return entry


def report_payload(check: Check, tier: str) -> dict[str, Any]:
    """The canonical report of a scored check (never a key value, never per-token data)."""
    if check.status != Status.DONE:
        raise Conflict(f"the check is {check.status}; a report needs a finished check")
    if check.reading == "pending":  # a report carries only the final decision
        raise Conflict("the check's reading is pending; a report needs its final decision")
    basic = tier != Team.OracleTier.AUDITOR
    rows = list(check.hypotheses.select_related("key", "tokenizer"))
    hypotheses = [_hypothesis(h, basic) for h in rows]
    log10_p = _rounded(check.log10_p) if basic else check.log10_p
    payload: dict[str, Any] = {
        "schema": report.SCHEMA,
        "subject": {
            "kind": "audit-item" if check.audit_id else "check",
            "id": str(check.id),
            "audit_id": str(check.audit_id) if check.audit_id else None,
            "client_id": check.client_id or None,
        },
        "text": {"sha256": check.text_sha256 or report.text_sha256(check.text)},
        "prf": report.PRF_VERSION,
        "detector_version": detector.__version__,
        "tier": tier,
        "threshold": check.threshold,
        "correction": check.correction,
        "num_hypotheses": len(hypotheses),
        "hypotheses": hypotheses,
        "verdict": {
            "is_watermarked": bool(check.is_watermarked),
            # three-way (watermarked, not_watermarked, inconclusive) and why; null before it
            "verdict": check.verdict or None,
            "reason": check.verdict_reason or None,
            # scored tokens a watermarked text of this kind needs for 80% power
            "tokens_needed": check.verdict_tokens_needed,
            # the best key's measured false-positive rate when the check was scored
            "key_measured_fpr": check.key_measured_fpr,
            "best": check.best_index,  # the decision's, as stored
            # the test the verdict rests on ("gamma": global test and span scan; "weighted")
            "decided_by": check.decided_by or None,
            "log10_p": log10_p,
            "p_value": 10.0**log10_p if log10_p is not None else None,
        },
        # what the text's Content Credentials said when it was scored (null: not read)
        "content_credentials": check.content_credentials,
        "checked_at": check.finished_at.isoformat() if check.finished_at else None,
        "issued_at": timezone.now().isoformat(),
    }
    spans = getattr(check, "spans", None)  # localized spans (null before scoring)
    if spans is not None:
        payload["spans"] = tiers.redact(spans) if basic else spans
    return payload


@sensitive_variables("private")
def report_sign(check: Check, tier: str) -> str:
    """The compact JWS of the check's report, signed with the active key."""
    payload = report_payload(check, tier)
    signer = signing_key_active()
    private = json.loads(decrypt_bytes(signer.encrypted_private))
    return report.sign(payload, private)
