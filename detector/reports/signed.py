"""Signed detection reports: a compact JWS (Ed25519) over a canonical JSON payload.

A report lets anyone who does not trust the issuing server re-check a verdict: the signature
against the server's published keys (``/.well-known/jwks.json``), the text against its SHA-256,
and, given the watermark key and the tokenizer, the numbers themselves by recomputing them.

Canonical JSON: keys sorted, no insignificant whitespace, UTF-8, no NaN or infinity; floats in
Python's shortest round-trip form. The signed bytes are exactly that serialization, and a
verifier refuses a payload that is not in canonical form. The payload never holds a key value:
keys appear by id and name.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import KeySet, OKPKey

if TYPE_CHECKING:
    from detector.text.ngrams import NgramTable

SCHEMA = "provenance.report/v1"
PRF_VERSION = "philox4x32-10-v1"
MEDIA_TYPE = "application/jose"
TYP = "provenance-report+jws"
ALGORITHM = "Ed25519"  # RFC 9864's fully specified name (EdDSA over Ed25519)
DEDUP_RULE = "first-occurrence-of-context"  # over the whole text (no history bound)
# A hypothesis's n-gram table: the content hash of the table that left the pairs common in
# human text unscored, or null (none applied). Absent from reports signed before it existed.
NGRAM_TABLE = "ngram_table"


class ReportError(Exception):
    """The report does not verify; the message says which check failed."""


def canonical_json(payload: Any) -> bytes:
    return json.dumps(
        payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def text_sha256(text: str) -> str:
    """SHA-256 of the exact UTF-8 bytes of ``text`` (no normalization)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def generate_signing_key() -> OKPKey:
    """A fresh Ed25519 key whose kid is its RFC 7638 thumbprint."""
    key = OKPKey.generate_key("Ed25519", auto_kid=True)
    return key


def sign(payload: dict[str, Any], private_jwk: dict[str, Any], typ: str = TYP) -> str:
    """Compact JWS of the canonical payload with the private JWK (which carries its kid)."""
    key = OKPKey.import_key(private_jwk)
    header = {"alg": ALGORITHM, "kid": private_jwk["kid"], "typ": typ}
    return jws.serialize_compact(header, canonical_json(payload), key, algorithms=[ALGORITHM])


@dataclass(frozen=True)
class Verified:
    payload: dict[str, Any]
    kid: str


def verify(token: str, jwks: dict[str, Any]) -> Verified:
    """Check the signature against the published keys; return the payload."""
    return verify_typed(token, jwks, TYP, SCHEMA, "report")


def header_typ(token: str) -> str | None:
    """The ``typ`` of a compact JWS's protected header, unverified (None: unreadable)."""
    return _header(token.strip()).get("typ")


def verify_typed(token: str, jwks: dict[str, Any], typ: str, schema: str, what: str) -> Verified:
    """``verify`` for a JWS of type ``typ`` whose payload's schema is ``schema`` (a report,
    or a public verification's receipt: ``detector.reports.receipt``)."""
    token = token.strip()
    kid = _header_kid(token)
    if not kid:
        # Without a kid, a key set of one key verifies with that key, and the revoked list
        # (a list of kids) is never read: every report this server signs names its key.
        raise ReportError(f"the {what} names no signing key (no kid in its header)")
    revoked = jwks.get("revoked") if isinstance(jwks, dict) else None
    if isinstance(revoked, list) and kid in revoked:
        raise ReportError(f"the {what} was signed with key {kid}, which its issuer revoked")
    try:
        keys = KeySet.import_key_set(jwks)  # type: ignore[arg-type]
    except (JoseError, ValueError, KeyError, TypeError) as exc:
        raise ReportError(f"the JWKS is not a valid key set ({exc})") from None
    try:
        obj = jws.deserialize_compact(token, keys, algorithms=[ALGORITHM])
    except JoseError as exc:
        raise ReportError(f"the signature does not verify ({exc.error})") from None
    except (ValueError, TypeError):
        raise ReportError("the report is not a compact JWS") from None
    header = obj.headers()
    if header.get("typ") != typ:
        raise ReportError(f"the {what}'s type is {header.get('typ')!r}, not {typ!r}")
    try:
        payload = json.loads(obj.payload)
    except ValueError:
        raise ReportError("the signed payload is not JSON") from None
    if not isinstance(payload, dict) or canonical_json(payload) != obj.payload:
        raise ReportError("the signed payload is not canonical JSON")
    if payload.get("schema") != schema:
        raise ReportError(f"unknown {what} schema {payload.get('schema')!r}")
    return Verified(payload=payload, kid=str(header.get("kid")))


def _header(token: str) -> dict[str, Any]:
    """A compact JWS's protected header, unverified ({} when unreadable)."""
    try:
        segment = token.split(".", 1)[0]
        header = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    except (ValueError, TypeError):
        return {}
    return header if isinstance(header, dict) else {}


def _header_kid(token: str) -> str | None:
    """The ``kid`` of a compact JWS's protected header, unverified (None: unreadable)."""
    kid = _header(token).get("kid")
    return kid if isinstance(kid, str) else None


def check_text(payload: dict[str, Any], text: str) -> None:
    expected = payload["text"]["sha256"]
    if text_sha256(text) != expected:
        raise ReportError("the text does not match the report's SHA-256 (it was changed)")


def hypothesis_to_check(payload: dict[str, Any], index: int | None) -> dict[str, Any]:
    """The hypothesis to recompute: ``index``, else the verdict's best one."""
    hypotheses = payload.get("hypotheses") or []
    if index is None:
        index = payload["verdict"].get("best")
    match = [h for h in hypotheses if h.get("index") == index]
    if not match:
        raise ReportError(f"the report has no hypothesis {index}")
    return match[0]


def recompute(
    payload: dict[str, Any],
    text: str,
    key: int,
    tokenizer: Any,
    index: int | None = None,
    ngram_table: NgramTable | None = None,
) -> dict[str, Any]:
    """Run the detector again on one hypothesis and compare with the report (ReportError):
    its plain Gamma test, then the decision (``detector.decision.decide``) as far as one key
    allows: the hypothesis's own decision p-value (global test and span scan, with the
    report's weighted-test p when a model read the text: recomputing that one needs the
    model), its spans, and the family's corrected p-value and verdict from it and the other
    hypotheses' reported decision p-values (Holm).

    The scored tokens are filtered by the n-gram table the report names (``ngram_table``: a
    table file given by the verifier, else the tokenizer's shipped one, whichever has the
    named content hash); a report naming a table neither has fails rather than being
    recomputed with another table's pairs."""
    from detector.core.config import KeyConfig
    from detector.evidence.detection import detect_config
    from detector.text.tokenizers import as_tokenizer

    h = hypothesis_to_check(payload, index)
    tok = as_tokenizer(tokenizer)
    if tok.content_hash != h["tokenizer"]["content_hash"]:
        raise ReportError(
            f"tokenizer content hash {tok.content_hash[:12]}... is not the report's "
            f"{str(h['tokenizer']['content_hash'])[:12]}... (a different tokenizer)"
        )
    config = KeyConfig(
        key=key,
        algorithm=h["algorithm"],
        context_width=int(h["context_width"]),
        alpha=float(h["alpha"]),
        deduplicate_contexts="single_turn" if h["deduplication"] == DEDUP_RULE else "none",
        deduplicate_contexts_max_history=None,  # the rule searches the whole text
    )
    version = payload.get("detector_version", "?")
    table = _table_of(h, config.context_width, [ngram_table, tok.ngram_table], version)
    d = detect_config(tok.encode(text), config, payload["threshold"], ngrams=table)
    got: dict[str, Any] = {
        "num_tokens": d.num_tokens,
        "num_scored_tokens": d.num_scored_tokens,
        "score": d.score,
        "log10_p": d.log10_p,
        "ngram_table": None if table is None else table.content_hash,
        "ngram_table_named": NGRAM_TABLE in h,
    }
    _compare(h, got)
    if h.get("decision_log10_p") is not None:  # reports signed before decisions were stored
        got.update(_recompute_decision(payload, h, d, config))
    return got


def _recompute_decision(
    payload: dict[str, Any], h: dict[str, Any], d: Any, config: Any
) -> dict[str, Any]:
    """The hypothesis's decision recomputed from its detection ``d``, compared with the
    report's decision (its own p-value, its spans, the family's corrected p and verdict)."""
    from detector.decision.family import correct
    from detector.decision.rule import flags, with_weighted
    from detector.evidence.localize import GAMMA_SHARES_USED, localize_detection

    hypotheses = payload["hypotheses"]
    threshold = float(payload["threshold"])
    rounded = bool(h.get("p_rounded"))

    def decided(share: float) -> tuple[Any, float]:
        loc = localize_detection(
            d, config, threshold=threshold, span_factor=len(hypotheses), gamma_share=share
        )
        weighted = h.get("weighted_log10_p")
        return loc, with_weighted(loc.log10_p, weighted, reserved=bool(h.get("reading_reserved")))

    # The split of the level the check was decided with: the current one, else one the
    # product decided with before (a report of a check scored then still holds); where none
    # agrees, the current split's figure is the one named.
    tried = (decided(share) for share in GAMMA_SHARES_USED)
    match = next((t for t in tried if _agrees(t[1], h["decision_log10_p"], rounded)), None)
    loc, own = match or decided(GAMMA_SHARES_USED[0])
    _close("decision log10 p", own, h["decision_log10_p"], rounded)
    spans = [s for s in payload.get("spans") or [] if s.get("key_id") == h["key"]["id"]]
    if not rounded and h["key"]["id"] is not None and payload.get("spans") is not None:
        want = [(s["start_token"], s["end_token"]) for s in spans]
        found = [(s.start, s.end) for s in loc.spans]
        if found != want:
            raise ReportError(f"spans: recomputed {found}, the report says {want}")
        for s, r in zip(loc.spans, spans, strict=True):
            _close("span log10 p", s.log10_p, r["log10_p"], False)
    others = [own if x is h else float(x["decision_log10_p"]) for x in hypotheses]
    if not rounded and all(x.get("decision_log10_p") is not None for x in hypotheses):
        adjusted = correct(others, payload.get("correction", "holm"))
        verdict = payload["verdict"]
        _close("corrected log10 p", float(adjusted.min()), verdict["log10_p"], False)
        best = int(adjusted.argmin())
        scored = int(hypotheses[best].get("num_scored_tokens") or 0)
        flagged = flags(float(adjusted[best]), threshold, scored)
        if flagged != bool(verdict["is_watermarked"]):
            raise ReportError(
                f"is_watermarked: recomputed {flagged}, the report says {verdict['is_watermarked']}"
            )
    return {"decision_log10_p": own, "num_spans": len(loc.spans)}


def _agrees(got: float, reported: Any, rounded: bool) -> bool:
    """Whether a recomputed figure is the reported one (at its power of ten when rounded)."""
    if reported is None:
        return True
    if rounded:
        return bool(math.floor(got) == reported)
    return math.isclose(got, float(reported), rel_tol=1e-9, abs_tol=1e-9)


def _close(what: str, got: float, reported: Any, rounded: bool) -> None:
    if _agrees(got, reported, rounded):
        return
    shown = f"{got:.3f}" if rounded else repr(got)
    raise ReportError(f"{what}: recomputed {shown}, the report says {reported!r}")


def _table_of(
    h: dict[str, Any], width: int, candidates: list[NgramTable | None], version: str
) -> NgramTable | None:
    """The table to recompute hypothesis ``h`` with: the one it names, found among
    ``candidates`` by content hash. A report signed before tables were named gets the first
    candidate that applies (as the detector did then)."""
    tables = [t for t in candidates if t is not None and t.applies_to(width)]
    if NGRAM_TABLE not in h:
        return tables[0] if tables else None
    wanted = h[NGRAM_TABLE]
    if wanted is None:
        return None
    for table in tables:
        if table.content_hash == wanted:
            return table
    have = ", ".join(f"{t.content_hash[:12]}..." for t in tables) or "none"
    raise ReportError(
        f"the report's scored tokens were filtered by n-gram table {str(wanted)[:12]}..., "
        f"and the tables here are not it ({have}): pass that table with --ngram-table FILE "
        f"(detector/text/ngram_tables/ of detector version {version})"
    )


def _compare(reported: dict[str, Any], got: dict[str, Any]) -> None:
    for field in ("num_tokens", "num_scored_tokens"):
        if reported.get(field) is not None and int(reported[field]) != got[field]:
            raise ReportError(
                f"{field}: recomputed {got[field]}, the report says {reported[field]}"
            )
    if reported.get("score") is not None and not math.isclose(
        got["score"], reported["score"], rel_tol=1e-9, abs_tol=1e-9
    ):
        raise ReportError(
            f"score: recomputed {got['score']!r}, the report says {reported['score']!r}"
        )
    lp = reported.get("log10_p")
    if reported.get("p_rounded"):  # a basic-tier report: p rounded down to its power of ten
        if math.floor(got["log10_p"]) != lp:
            raise ReportError(f"log10 p: recomputed {got['log10_p']:.3f}, the report says {lp}")
    elif lp is not None and not math.isclose(got["log10_p"], lp, rel_tol=1e-9, abs_tol=1e-9):
        raise ReportError(f"log10 p: recomputed {got['log10_p']!r}, the report says {lp!r}")
