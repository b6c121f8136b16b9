"""Receipts of public verification: signed, verified offline, refused when one character of
the receipt or of the text changes, and never taken for a report."""

from __future__ import annotations

import pytest

from detector.reports.receipt import SCHEMA, is_receipt, sign_receipt, verify_receipt
from detector.reports.signed import ReportError, check_text, text_sha256, verify
from tests.detector.reports.payloads import issuer

TEXT = "A text someone checked."


def payload() -> dict:
    return {
        "issuer": "Acme",
        "text": {"sha256": text_sha256(TEXT)},
        "verdict": "watermarked",
        "model": "Acme Assistant",
        "strength": -12,
        "tokens_scored": 140,
        "models": ["Acme Assistant"],
        "at": "2026-12-02T12:00:00+00:00",
    }


@pytest.fixture(scope="module")
def signed():
    signer = issuer()
    return sign_receipt(payload(), signer.private), signer.jwks


def test_a_receipt_verifies_and_names_its_schema(signed):
    token, jwks = signed
    got = verify_receipt(token, jwks).payload
    assert got == {**payload(), "schema": SCHEMA}
    check_text(got, TEXT)
    assert is_receipt(token)


def test_one_changed_character_of_the_receipt_fails(signed):
    token, jwks = signed
    head, body, signature = token.split(".")
    flipped = body[:10] + ("A" if body[10] != "A" else "B") + body[11:]
    with pytest.raises(ReportError):
        verify_receipt(".".join([head, flipped, signature]), jwks)


def test_one_changed_character_of_the_text_fails(signed):
    token, jwks = signed
    with pytest.raises(ReportError, match="changed"):
        check_text(verify_receipt(token, jwks).payload, TEXT[:-1] + "!")


def test_a_receipt_is_not_a_report_and_a_report_not_a_receipt(signed):
    token, jwks = signed
    with pytest.raises(ReportError, match="type"):
        verify(token, jwks)


def test_another_issuer_key_fails(signed):
    token, _ = signed
    with pytest.raises(ReportError, match="signature"):
        verify_receipt(token, issuer().jwks)


def test_a_receipt_holds_exactly_its_fields():
    with pytest.raises(ValueError):
        sign_receipt({**payload(), "p_value": 1e-12}, issuer().private)
