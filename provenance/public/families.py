"""The scrubbing guard: near-duplicate texts form a family, and a family is answered at most
``PROVENANCE_PUBLIC_MAX_VARIANTS`` times within ``PROVENANCE_PUBLIC_VARIANT_WINDOW_S``.

A scrubbing loop edits a watermarked text a little at a time and asks again after each edit,
until the verdict turns; every variant stays close to the others. Each text's MinHash
(``datasketch``, 64 permutations over its word 3-shingles) is cut into the bands that
datasketch's ``MinHashLSH`` chooses for a Jaccard threshold of 0.5; a band seen before names
the family of the text that first put it there. The bands and the family counters live in the
cache (Redis across processes, each entry expiring with the window). When a family passes the
limit its answers stop (429 for the rest of the window) and a ``ScrubEvent`` names the
SHA-256 of every variant for the admins.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re

from datasketch import MinHash, MinHashLSH
from django.conf import settings
from django.core.cache import cache

from provenance.errors import ProblemError
from provenance.public.models import ScrubEvent

NUM_PERM = 64
JACCARD = 0.5  # word 3-shingle Jaccard similarity above which two texts are likely variants
SHINGLE = 3
MAX_LOGGED = 1000  # text hashes one event keeps
_WORD = re.compile(r"\w+", re.UNICODE)

logger = logging.getLogger(__name__)


class VariantLimit(ProblemError):
    status_code = 429
    default_code = "variant_limit"

    def __init__(self, retry_after: int) -> None:
        self.retry_after = retry_after
        super().__init__(
            "too many near-duplicate variants of this text were checked; answers for it "
            "stop for a while"
        )


@functools.cache
def _bands() -> tuple[int, int]:
    lsh = MinHashLSH(threshold=JACCARD, num_perm=NUM_PERM)
    return lsh.b, lsh.r


def shingles(text: str) -> set[bytes]:
    words = [w.lower() for w in _WORD.findall(text)] or [text]
    n = min(SHINGLE, len(words))
    return {" ".join(words[i : i + n]).encode() for i in range(len(words) - n + 1)}


def band_keys(text: str) -> list[str]:
    m = MinHash(num_perm=NUM_PERM)
    m.update_batch(list(shingles(text)))
    b, r = _bands()
    values = m.hashvalues
    return [
        f"public:lsh:{i}:{hashlib.sha256(values[i * r : (i + 1) * r].tobytes()).hexdigest()[:32]}"
        for i in range(b)
    ]


def family_observe(text: str, text_sha256: str) -> str:
    """Count ``text`` in its family and return the family's id (the SHA-256 of its first
    text); VariantLimit once the family has had its answers for the window."""
    window = settings.PROVENANCE_PUBLIC_VARIANT_WINDOW_S
    keys = band_keys(text)
    found = cache.get_many(keys)
    family = next((found[k] for k in keys if k in found), text_sha256)
    cache.set_many({k: family for k in keys if k not in found}, timeout=window)
    counter = f"public:family:count:{family}"
    cache.add(counter, 0, window)
    count = cache.incr(counter)
    members = f"public:family:texts:{family}"
    hashes = cache.get(members) or []
    if text_sha256 not in hashes and len(hashes) < MAX_LOGGED:
        cache.set(members, [*hashes, text_sha256], window)
    if count > settings.PROVENANCE_PUBLIC_MAX_VARIANTS:
        _log_once(family, count, cache.get(members) or hashes)
        raise VariantLimit(window)
    return str(family)


def _log_once(family: str, count: int, hashes: list[str]) -> None:
    event = ScrubEvent.objects.filter(family=family).order_by("-created_at").first()
    if event is None or not cache.get(f"public:family:logged:{family}"):
        cache.set(f"public:family:logged:{family}", 1, settings.PROVENANCE_PUBLIC_VARIANT_WINDOW_S)
        ScrubEvent.objects.create(family=family, variants=count, text_hashes=hashes)
        logger.warning("public: scrubbing loop stopped, family %s after %d", family[:12], count)
        return
    event.variants, event.text_hashes = count, hashes
    event.save(update_fields=["variants", "text_hashes"])
