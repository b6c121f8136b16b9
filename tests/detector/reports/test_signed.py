"""Signed reports offline: the signature, its key set and revocations, the canonical payload,
the text's hash, and the recomputation that catches any changed number."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import math

import pytest
from joserfc import jws
from joserfc.jwk import OKPKey

from detector.reports.signed import (
    ALGORITHM,
    TYP,
    ReportError,
    canonical_json,
    check_text,
    hypothesis_to_check,
    recompute,
    text_sha256,
    verify,
)
from detector.text.tokenizers import load_tokenizer
from tests.detector.reports.payloads import KEY, issuer, payload, watermarked_text


@pytest.fixture(scope="module")
def text():
    return watermarked_text()


@pytest.fixture(scope="module")
def body(text):
    return payload(text, [KEY + 1, KEY])  # the true key is hypothesis 1


@pytest.fixture(scope="module")
def signer():
    return issuer()


def _segments(token: str) -> list[str]:
    return token.split(".")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_a_signed_payload_verifies_and_names_its_key(signer, body):
    verified = verify(signer.sign(body), signer.jwks)
    assert verified.payload == body
    assert verified.kid == signer.private["kid"] == signer.jwks["keys"][0]["kid"]
    header = json.loads(base64.urlsafe_b64decode(_segments(signer.sign(body))[0] + "=="))
    assert header == {"alg": ALGORITHM, "kid": signer.private["kid"], "typ": TYP}


def test_surrounding_whitespace_of_a_token_is_ignored(signer, body):
    assert verify(f"\n  {signer.sign(body)}\n", signer.jwks).payload == body


def test_a_tampered_payload_fails(signer, body):
    header, _, signature = _segments(signer.sign(body))
    forged = copy.deepcopy(body)
    forged["verdict"]["is_watermarked"] = not forged["verdict"]["is_watermarked"]
    with pytest.raises(ReportError, match="signature does not verify"):
        verify(f"{header}.{_b64(canonical_json(forged))}.{signature}", signer.jwks)


def test_a_changed_signature_fails(signer, body):
    header, encoded, signature = _segments(signer.sign(body))
    flipped = ("A" if signature[3] != "A" else "B").join((signature[:3], signature[4:]))
    with pytest.raises(ReportError):
        verify(f"{header}.{encoded}.{flipped}", signer.jwks)


def test_another_issuers_key_set_does_not_verify_it(signer, body):
    with pytest.raises(ReportError):
        verify(signer.sign(body), issuer().jwks)


def test_a_report_signed_with_a_revoked_key_is_refused(signer, body):
    kid = signer.private["kid"]
    revoked = {**signer.jwks, "revoked": [kid]}
    with pytest.raises(ReportError, match=f"key {kid}, which its issuer revoked"):
        verify(signer.sign(body), revoked)
    other = {**signer.jwks, "revoked": ["some-other-kid"]}
    assert verify(signer.sign(body), other).kid == kid


def test_a_key_set_that_is_not_one_is_refused(signer, body):
    with pytest.raises(ReportError, match="not a valid key set"):
        verify(signer.sign(body), {"keys": [{"kty": "nonsense"}]})


@pytest.mark.parametrize("token", ["", "not a report", "a.b", "%%%.%%%.%%%"])
def test_what_is_not_a_compact_jws_is_refused(signer, token):
    with pytest.raises(ReportError):
        verify(token, signer.jwks)


def _signed_raw(signer, data: bytes, typ: str = TYP) -> str:
    key = OKPKey.import_key(signer.private)
    header = {"alg": ALGORITHM, "kid": signer.private["kid"], "typ": typ}
    return jws.serialize_compact(header, data, key, algorithms=[ALGORITHM])


def test_a_validly_signed_but_non_canonical_payload_is_refused(signer, body):
    spaced = json.dumps(body, indent=1).encode()
    with pytest.raises(ReportError, match="not canonical JSON"):
        verify(_signed_raw(signer, spaced), signer.jwks)
    with pytest.raises(ReportError, match="not JSON"):
        verify(_signed_raw(signer, b"{not json"), signer.jwks)


def test_another_type_or_schema_is_refused(signer, body):
    with pytest.raises(ReportError, match="type is 'JWT'"):
        verify(_signed_raw(signer, canonical_json(body), typ="JWT"), signer.jwks)
    with pytest.raises(ReportError, match="unknown report schema"):
        verify(signer.sign({**body, "schema": "provenance.report/v0"}), signer.jwks)


def test_canonical_json_sorts_keys_drops_whitespace_and_refuses_nan():
    assert canonical_json({"b": 1, "a": [1.5, "é"]}) == '{"a":[1.5,"é"],"b":1}'.encode()
    with pytest.raises(ValueError):
        canonical_json({"x": math.nan})


def test_the_text_hash_is_of_the_exact_bytes():
    composed, decomposed = "caf\u00e9", "cafe\u0301"  # one text, two Unicode forms
    assert text_sha256(composed) == hashlib.sha256(composed.encode("utf-8")).hexdigest()
    assert text_sha256(composed) != text_sha256(decomposed)


def test_check_text_passes_the_text_and_fails_one_changed_character(body, text):
    check_text(body, text)
    changed = text[:5] + ("x" if text[5] != "x" else "y") + text[6:]
    with pytest.raises(ReportError, match="SHA-256"):
        check_text(body, changed)


def test_the_hypothesis_checked_is_the_best_unless_one_is_named(body):
    assert hypothesis_to_check(body, None)["index"] == body["verdict"]["best"] == 1
    assert hypothesis_to_check(body, 0)["index"] == 0
    with pytest.raises(ReportError, match="no hypothesis 7"):
        hypothesis_to_check(body, 7)


def test_recomputing_with_the_key_reproduces_the_report(body, text):
    got = recompute(body, text, KEY, load_tokenizer())
    reported = body["hypotheses"][1]
    assert got["num_scored_tokens"] == reported["num_scored_tokens"] > 0
    assert got["log10_p"] == reported["log10_p"] < -10
    assert got["decision_log10_p"] == reported["decision_log10_p"] and got["num_spans"] >= 1
    assert got["ngram_table"] == reported["ngram_table"] and got["ngram_table_named"]


def test_recomputing_with_another_key_fails(body, text):
    with pytest.raises(ReportError, match="recomputed"):
        recompute(body, text, KEY ^ 1, load_tokenizer())


@pytest.mark.parametrize(
    "field,change,message",
    [
        ("num_scored_tokens", lambda v: v - 1, "num_scored_tokens"),
        ("score", lambda v: v * (1 + 1e-6), "score"),
        ("log10_p", lambda v: v + 0.5, "log10 p"),
        ("decision_log10_p", lambda v: v + 0.5, "decision log10 p"),
    ],
)
def test_a_changed_number_is_caught_by_recomputing(body, text, field, change, message):
    changed = copy.deepcopy(body)
    changed["hypotheses"][1][field] = change(changed["hypotheses"][1][field])
    with pytest.raises(ReportError, match=message):
        recompute(changed, text, KEY, load_tokenizer())


def test_a_changed_family_verdict_is_caught_by_recomputing(body, text):
    lowered = copy.deepcopy(body)
    lowered["verdict"]["log10_p"] += 1.0
    with pytest.raises(ReportError, match="corrected log10 p"):
        recompute(lowered, text, KEY, load_tokenizer())
    flipped = copy.deepcopy(body)
    flipped["verdict"]["is_watermarked"] = False
    with pytest.raises(ReportError, match="is_watermarked"):
        recompute(flipped, text, KEY, load_tokenizer())
    moved = copy.deepcopy(body)
    moved["spans"][0]["start_token"] += 3
    with pytest.raises(ReportError, match="spans"):
        recompute(moved, text, KEY, load_tokenizer())


def test_a_report_from_another_tokenizer_fails(body, text):
    other = copy.deepcopy(body)
    other["hypotheses"][1]["tokenizer"]["content_hash"] = "0" * 64
    with pytest.raises(ReportError, match="a different tokenizer"):
        recompute(other, text, KEY, load_tokenizer())


def test_a_report_naming_an_unknown_ngram_table_fails_clearly(body, text):
    other = copy.deepcopy(body)
    other["hypotheses"][1]["ngram_table"] = "f" * 64
    with pytest.raises(ReportError, match="--ngram-table"):
        recompute(other, text, KEY, load_tokenizer())


def test_a_report_from_before_decisions_recomputes_the_gamma_test_only(text):
    old = payload(text, [KEY], decisions=False)
    got = recompute(old, text, KEY, load_tokenizer())
    assert got["log10_p"] == old["hypotheses"][0]["log10_p"] and "decision_log10_p" not in got


def test_a_rounded_report_is_compared_at_its_power_of_ten(text):
    basic = payload(text, [KEY], decisions=False)
    h = basic["hypotheses"][0]
    h.update(score=None, p_value=None, log10_p=math.floor(h["log10_p"]), p_rounded=True)
    assert recompute(basic, text, KEY, load_tokenizer())["log10_p"] >= h["log10_p"]
    h["log10_p"] -= 1
    with pytest.raises(ReportError, match="log10 p"):
        recompute(basic, text, KEY, load_tokenizer())


def _decided_with_split(text: str, share: float, monkeypatch: pytest.MonkeyPatch) -> dict:
    """A report whose figures were decided with the model-free split ``share``."""
    from detector.evidence import localize

    with monkeypatch.context() as m:
        m.setattr(localize, "GAMMA_SHARE", share)
        return payload(text, [KEY + 1, KEY])


def test_a_report_decided_with_an_earlier_split_still_recomputes(text, monkeypatch):
    """A check scored before the split of the model-free level changed (0.5 until 0.7) keeps
    its figures; its report must still verify against the text and the key."""
    from detector.evidence.localize import GAMMA_SHARE, GAMMA_SHARES_USED

    old = _decided_with_split(text, 0.5, monkeypatch)
    now = payload(text, [KEY + 1, KEY])
    assert 0.5 in GAMMA_SHARES_USED and GAMMA_SHARE != 0.5
    reported = old["hypotheses"][1]["decision_log10_p"]
    assert reported != now["hypotheses"][1]["decision_log10_p"]  # the split moved it
    got = recompute(old, text, KEY, load_tokenizer())
    assert got["decision_log10_p"] == pytest.approx(reported, rel=1e-12)
    assert recompute(now, text, KEY, load_tokenizer())["decision_log10_p"] == pytest.approx(
        now["hypotheses"][1]["decision_log10_p"], rel=1e-12
    )


def test_a_report_decided_with_a_split_never_used_fails(text, monkeypatch):
    odd = _decided_with_split(text, 0.6, monkeypatch)
    with pytest.raises(ReportError, match="decision log10 p"):
        recompute(odd, text, KEY, load_tokenizer())
