"""The scrubbing guard: near-duplicate texts form a family, and one requester is answered at
most ``PROVENANCE_PUBLIC_MAX_VARIANTS`` texts of a family within
``PROVENANCE_PUBLIC_VARIANT_WINDOW_S``.

A scrubbing loop edits a watermarked text a little at a time and asks again after each edit,
until the verdict turns. It may hide each variant inside fresh text (padding) or send it in
pieces, so the guard does not compare whole texts: it asks whether some part of the new text
is contained in a text seen before. Each text's word 3-shingles are hashed (64 bits) and a
fixed half of them kept (the hash is 0 modulo ``SAMPLE``: the same shingles in every
text, so containment between texts carries over to the kept ones). Every kept shingle seen
names the family of the text that first held it. The new text's kept shingles, in order,
are read in windows of ``WINDOW`` (about 32 words; the whole text when shorter): a window
of which at least ``CONTAINED`` belong to one family (or to families each holding
``SHARED`` of it) puts the text in that family (those families). Padding
does not dilute a window that lies inside the variant, and a piece of a text is contained
in it. A text in several families counts in each, as the next variant of the one asked
most.

The fingerprints and the counters live in the public cache (``selectors.public_cache``:
Redis across processes, bounded, each entry expiring with the window). A family's count is
kept per requester (a partner, or an address's scope: ``budgets.requester``), so nobody can
use up a text's answers for anyone else. When a requester passes the limit its answers for
the family stop (429 for the rest of the window) and a ``ScrubEvent`` names the SHA-256 of
every variant for the admins.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
from collections import Counter

from django.conf import settings

from provenance.errors import ProblemError
from provenance.public.models import ScrubEvent
from provenance.public.selectors import public_cache

SHINGLE = 3
SAMPLE = 2  # one shingle in SAMPLE is kept (by its hash, so the same ones in every text)
WINDOW = 16  # kept shingles a window reads (about 32 words)
CONTAINED = 0.5  # the share of a window's kept shingles that puts it in a family
MIN_HITS = 4  # fewer shingles of one family than this match nothing, however short the text
SHARED = 2  # a family holding this many of a window's shingles counts in the families holding it
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


def shingles(text: str) -> list[bytes]:
    """The word 3-shingles of ``text`` in order (lower case; the whole text when shorter)."""
    words = [w.lower() for w in _WORD.findall(text)] or [text]
    n = min(SHINGLE, len(words))
    return [" ".join(words[i : i + n]).encode() for i in range(len(words) - n + 1)]


def fingerprints(text: str) -> list[int]:
    """The kept shingles' 64-bit hashes, in the text's order (repeats included)."""
    out = []
    for shingle in shingles(text):
        value = int.from_bytes(hashlib.blake2b(shingle, digest_size=8).digest(), "big")
        if value % SAMPLE == 0:
            out.append(value)
    return out


def _key(value: int) -> str:
    return f"public:guard:{value:016x}"


def matching(kept: list[int], owners: dict[int, str]) -> list[str]:
    """The families that one window of ``kept`` (``WINDOW`` kept shingles, or all of them
    when fewer) is contained in: at least ``CONTAINED`` of its shingles are that family's;
    or, where no one family holds that much, are held together by families each holding at
    least ``SHARED`` of them (a piece cut across two earlier pieces is in both).
    ``owners``: the family of each kept shingle seen before. Best first (most shingles)."""
    width = min(WINDOW, len(kept))
    need = max(MIN_HITS, math.ceil(CONTAINED * width))
    window: Counter[str] = Counter()
    found: set[str] = set()
    for i, value in enumerate(kept):
        if i >= width:
            leaving = owners.get(kept[i - width])
            if leaving is not None:
                window[leaving] -= 1
        family = owners.get(value)
        if family is None:
            continue
        window[family] += 1
        if window[family] >= need:
            found.add(family)
        elif i >= width - 1 and window.total() >= need:
            held = [f for f, hits in window.items() if hits >= SHARED]
            if sum(window[f] for f in held) >= need:
                found.update(held)
    total = Counter(owners[v] for v in kept if v in owners)
    return sorted(found, key=lambda f: (-total[f], f))


def family_observe(text: str, text_sha256: str, requester: str = "") -> str:
    """Count ``text`` in its families for ``requester`` and return the family's id (the
    SHA-256 of its first text); VariantLimit once the requester has had its answers of one
    of them for the window."""
    store = public_cache()
    window = settings.PROVENANCE_PUBLIC_VARIANT_WINDOW_S
    kept = fingerprints(text)
    unique = list(dict.fromkeys(kept))
    found = store.get_many([_key(v) for v in unique])
    owners = {v: found[_key(v)] for v in unique if _key(v) in found}
    families = matching(kept, owners) or [text_sha256]
    family = families[0]
    store.set_many({_key(v): family for v in unique if v not in owners}, timeout=window)
    members = f"public:family:texts:{family}"
    hashes = store.get(members) or []
    if text_sha256 not in hashes and len(hashes) < MAX_LOGGED:
        hashes = [*hashes, text_sha256]
        store.set(members, hashes, window)
    # One more variant of the most-asked family: each family the text is in counts up to it
    # (atomic increments, so concurrent checks only ever count more).
    counters = [f"public:family:count:{each}:{requester}" for each in families]
    counts = []
    for counter in counters:
        store.add(counter, 0, window)
        counts.append(store.incr(counter))
    top = max(counts)
    for counter, count in zip(counters, counts, strict=True):
        if count < top:
            store.incr(counter, top - count)
    if top > settings.PROVENANCE_PUBLIC_MAX_VARIANTS:
        each = families[counts.index(top)]
        _log_once(each, top, store.get(f"public:family:texts:{each}") or hashes)
        raise VariantLimit(window)
    return str(family)


def _log_once(family: str, count: int, hashes: list[str]) -> None:
    store = public_cache()
    event = ScrubEvent.objects.filter(family=family).order_by("-created_at").first()
    if event is None or not store.get(f"public:family:logged:{family}"):
        store.set(f"public:family:logged:{family}", 1, settings.PROVENANCE_PUBLIC_VARIANT_WINDOW_S)
        ScrubEvent.objects.create(family=family, variants=count, text_hashes=hashes)
        logger.warning("public: scrubbing loop stopped, family %s after %d", family[:12], count)
        return
    event.variants, event.text_hashes = max(event.variants, count), hashes
    event.save(update_fields=["variants", "text_hashes"])
