"""Signed-report payloads built here from a detection, without the web service: a signing
key, its JWKS and a report over a watermarked text, as ``detector.reports.signed`` reads them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from detector.core.config import KeyConfig
from detector.decision.family import correct
from detector.decision.rule import with_weighted
from detector.evidence.detection import detect_config
from detector.evidence.localize import localize_detection
from detector.reports.signed import (
    DEDUP_RULE,
    PRF_VERSION,
    SCHEMA,
    generate_signing_key,
    sign,
    text_sha256,
)
from detector.text.tokenizers import load_tokenizer
from tests.detector.text.test_tokenizers import word_vocabulary
from tests.detector.toy import keyed_sample

KEY = 0xFEEDFACECAFEBEEF
THRESHOLD = 0.01


def watermarked_text(key: int = KEY, seed: int = 12, steps: int = 120) -> str:
    tok = load_tokenizer()
    rng = np.random.default_rng(seed)
    return tok.decode(
        keyed_sample(key, rng.normal(0, 1.5, (steps, 3000)), vocab_ids=word_vocabulary(tok))
    )


def payload(text: str, keys: list[int], *, decisions: bool = True) -> dict[str, Any]:
    """The report a server would sign for ``text`` checked against ``keys`` (one hypothesis
    each), with each hypothesis's decision p-value and the family's Holm-corrected verdict
    (``decisions=False``: a report from before decisions were stored)."""
    tok = load_tokenizer()
    ids = tok.encode(text)
    hypotheses, spans = [], []
    for index, key in enumerate(keys):
        config = KeyConfig(key=key, deduplicate_contexts_max_history=None)
        table = tok.ngram_table
        table = table if table is not None and table.applies_to(config.context_width) else None
        d = detect_config(ids, config, THRESHOLD, ngrams=table)
        loc = localize_detection(d, config, threshold=THRESHOLD, span_factor=len(keys))
        h = {
            "index": index,
            "key": {"id": f"key-{index}", "name": f"key {index}"},
            "tokenizer": {"name": tok.name, "content_hash": tok.content_hash},
            "algorithm": config.algorithm,
            "alpha": config.alpha,
            "context_width": config.context_width,
            "deduplication": DEDUP_RULE,
            "num_tokens": d.num_tokens,
            "num_scored_tokens": d.num_scored_tokens,
            "score": d.score,
            "p_value": d.p_value,
            "log10_p": d.log10_p,
            "ngram_table": None if table is None else table.content_hash,
        }
        if decisions:
            h["decision_log10_p"] = with_weighted(loc.log10_p, None)
            spans += [
                {
                    "key_id": h["key"]["id"],
                    "start_token": s.start,
                    "end_token": s.end,
                    "log10_p": s.log10_p,
                }
                for s in loc.spans
            ]
        hypotheses.append(h)
    own = [h.get("decision_log10_p", h["log10_p"]) for h in hypotheses]
    adjusted = correct(own, "holm")
    best = int(adjusted.argmin())
    return {
        "schema": SCHEMA,
        "text": {"sha256": text_sha256(text)},
        "prf": PRF_VERSION,
        "detector_version": "test",
        "threshold": THRESHOLD,
        "correction": "holm",
        "num_hypotheses": len(hypotheses),
        "hypotheses": hypotheses,
        "spans": spans if decisions else None,
        "verdict": {
            "is_watermarked": bool(adjusted[best] <= math.log10(THRESHOLD)),
            "best": best,
            "log10_p": float(adjusted[best]),
        },
    }


@dataclass(frozen=True)
class Issuer:
    """A signing key and the key set it publishes."""

    private: dict[str, Any]
    jwks: dict[str, Any]

    def sign(self, body: dict[str, Any]) -> str:
        return sign(body, self.private)


def issuer() -> Issuer:
    key = generate_signing_key()
    return Issuer(key.as_dict(private=True), {"keys": [key.as_dict(private=False)]})
