"""Reads of public verification: the published keys, the discovery document, partners."""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.core.cache import BaseCache, caches
from django.db.models import QuerySet
from django.urls import reverse

from detector.credentials.manifest import SOFT_BINDING_ALG, c2pa_soft_binding_value
from detector.decision import combined, rule
from detector.decision.decide import CORRECTION
from detector.reports import receipt
from detector.reports.signed import ALGORITHM, PRF_VERSION
from provenance.keys.models import WatermarkKey
from provenance.lib import rowcache
from provenance.public.models import Partner

DISCOVERY_SCHEMA = "provenance.discovery/v1"
ANSWER_FIELDS = ("verdict", "model", "strength", "tokens_scored", "receipt")


def public_cache() -> BaseCache:
    """The store of answers, peers' answers and the scrubbing guard: the bounded ``public``
    cache (``PROVENANCE_PUBLIC_CACHE_URL``) where one is configured, else the default one.
    Budgets and spent proofs of work stay in the default cache: evicting them would hand out
    budget and replays."""
    return caches["public" if "public" in settings.CACHES else "default"]


def published_keys() -> QuerySet[WatermarkKey]:
    """Every published key, retired ones included (they still detect old text)."""
    return (
        WatermarkKey.objects.filter(published_at__isnull=False)
        .select_related("tokenizer")
        .order_by("published_at", "id")
    )


def published_key_list() -> list[WatermarkKey]:
    """``published_keys`` as a list, read through the row cache (``provenance.lib.rowcache``:
    every public check reads them; the rows are compared on each call, so publishing,
    withdrawing or retiring a key is seen by the next). Shared by the process's threads:
    read them, never change them."""
    return rowcache.validated(("keys_published",), published_keys)


def model_summary(key: WatermarkKey) -> dict[str, Any]:
    """What the world may know of a published key (never its value, id or team)."""
    return {
        "name": key.public_name,
        "tokenizer": {"name": key.tokenizer.name, "content_hash": key.tokenizer.content_hash},
        "algorithm": key.algorithm,
        "prf": PRF_VERSION,
        "context_width": key.context_width,
        "status": key.status,
        "soft_binding_value": c2pa_soft_binding_value(key.public_id),
    }


def discovery(request: Any) -> dict[str, Any]:
    """The discovery document (``/.well-known/provenance.json``; its JSON Schema is
    ``provenance/public/schema/provenance.schema.json``)."""

    def url(name: str) -> str:
        return str(request.build_absolute_uri(reverse(name)))

    peers = list(settings.PROVENANCE_PUBLIC_PEERS)

    return {
        "schema": DISCOVERY_SCHEMA,
        "organization": {"name": settings.PROVENANCE_PUBLIC_ORGANIZATION},
        "models": [model_summary(key) for key in published_keys()],
        "verification": {
            "endpoint": url("public-verify-api"),
            "challenge": url("public-challenge"),
            "page": url("public-verify"),
            "answer": list(ANSWER_FIELDS) + (["peers", "combined"] if peers else []),
        },
        "jwks_uri": url("jwks"),
        "content_credentials": content_credentials(url("c2pa-supported-algorithms")),
        "receipt": {"schema": receipt.SCHEMA, "typ": receipt.TYP, "alg": ALGORITHM},
        "limits": {
            "anonymous_per_minute": settings.PROVENANCE_PUBLIC_ADDRESS_PER_MIN,
            "global_per_minute": settings.PROVENANCE_PUBLIC_GLOBAL_PER_MIN,
            "partner_per_minute": settings.PROVENANCE_PUBLIC_PARTNER_PER_MIN,
            "max_text_bytes": settings.PROVENANCE_MAX_TEXT_BYTES,
            # the public minimum: the guard's words (families.MIN_WORDS) and the decision's
            # own tokens; a shorter text is refused, 400 too_short
            "min_words": families_min_words(),
            "min_tokens": rule.MIN_TOKENS,
            "max_variants": settings.PROVENANCE_PUBLIC_MAX_VARIANTS,
            "max_texts": settings.PROVENANCE_PUBLIC_MAX_TEXTS,
            "partner_max_texts": settings.PROVENANCE_PUBLIC_PARTNER_MAX_TEXTS,
            "variant_window_s": settings.PROVENANCE_PUBLIC_VARIANT_WINDOW_S,
        },
        "policy": {
            "threshold": settings.PROVENANCE_THRESHOLD,
            "correction": CORRECTION,  # the decision's own
            "strength": strength_policy(),
            "proof_of_work": {
                "scheme": "altcha-v1",
                "algorithm": "SHA-256",
                "max_number": settings.PROVENANCE_PUBLIC_POW_MAX_NUMBER,
                "header": "X-Provenance-PoW",
            },
            "partners": "Authorization: Bearer KEY, no proof of work, a budget of their own",
        },
        "peers": {
            "discovery": peers,
            "max_peers": settings.PROVENANCE_PUBLIC_MAX_PEERS,
            "timeout_s": settings.PROVENANCE_PUBLIC_PEER_TIMEOUT_S,
            "correction": combined.CORRECTION,  # the combined claim's, the decision's
        },
    }


def families_min_words() -> int:
    """``families.MIN_WORDS`` (imported here: the guard's module imports this one)."""
    from provenance.public.families import MIN_WORDS

    return MIN_WORDS
def content_credentials(supported: str) -> dict[str, str]:
    """Where the soft binding resolution API answers (``provenance.softbinding``), from the
    address of its first route."""
    base = supported.rsplit("services/", 1)[0]
    return {
        "soft_binding_alg": SOFT_BINDING_ALG,
        "resolution_api": base,
        "supported_algorithms": supported,
        "by_content": base + "matches/byContent",
        "by_binding": base + "matches/byBinding",
        "manifests": base + "manifests/",
    }


def strength_policy() -> str:
    """The strength's bands in words, from the library's (``combined.STRENGTH_BANDS``)."""
    bands = combined.STRENGTH_BANDS
    strengths = ", ".join(str(bound - 1) for bound in bands)
    bounds = ", ".join(f"1e{bound}" for bound in bands)
    return (
        "the corrected p-value's band, only when watermarked: p < 10^(strength+1), "
        f"strength one of {strengths} (p < {bounds}) or -1"
    )


def key_sha256(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def partner_by_key(key: str) -> Partner | None:
    """The unrevoked partner holding ``key``, or None."""
    return Partner.objects.filter(key_sha256=key_sha256(key), revoked_at__isnull=True).first()
