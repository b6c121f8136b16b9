"""The scrubbing guard: near-duplicate texts form a family, and one requester is answered at
most ``PROVENANCE_PUBLIC_MAX_VARIANTS`` texts of a family, and at most
``PROVENANCE_PUBLIC_MAX_TEXTS`` texts in all (``PROVENANCE_PUBLIC_PARTNER_MAX_TEXTS`` for a
partner), within ``PROVENANCE_PUBLIC_VARIANT_WINDOW_S``.

A scrubbing loop edits a watermarked text a little at a time and asks again after each edit,
until the verdict turns. It may hide each variant inside fresh text (padding) or send it in
pieces, so the guard does not compare whole texts: it asks whether some part of the new text
is contained in a text seen before. Each of a text's word 3-shingles is hashed (64 bits,
keyed with a secret derived from the server's ``SECRET_KEY``: nobody without it can tell
which shingles two texts share in the guard's eyes, or pick texts offline by their hashes).
Every shingle seen names the family of the text that first held it. The new text's
shingles, in order, are read in windows of ``WINDOW`` (32 words; the whole text when
shorter): a window of which at least ``CONTAINED`` belong to one family (or to families each
holding ``SHARED`` of it) puts the text in that family (those families). Padding does not
dilute a window that lies inside the variant, and a piece of a text is contained in it. A
text in several families counts in each, as the next variant of the one asked most.

The guard has no blind spot: public verification answers no text shorter than ``MIN_WORDS``
words (``public_minimum``, 400 ``too_short``), the fewest at which two one-word edits of one
text share ``MIN_HITS`` shingles, and no fewer than ``CONTAINED`` of a window; every shingle
is kept (none sampled away), so that holds whatever the words are. A requester's
total of answered texts is bounded whatever their families (``texts_observe``), so many
small families buy no more answers than the cap.

The fingerprints and the family counters live in the public cache
(``stores.public_cache``: Redis across processes, bounded, each entry expiring with the
window); the total of a requester's texts lives in the default cache, where nothing is
evicted (as the budgets). A count is kept per requester (a partner, or an address's scope:
``budgets.requester``), so nobody can use up a text's answers for anyone else. When a
requester passes a family's limit its answers for the family stop (429 for the rest of the
window) and a ``ScrubEvent`` names the SHA-256 of every variant for the admins.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from django.conf import settings
from django.core.cache import cache

from detector.decision import rule
from detector.text.wrapper import without_wrappers
from provenance.errors import ProblemError
from provenance.public.models import ScrubEvent
from provenance.public.stores import public_cache

SHINGLE = 3
WINDOW = 32  # shingles a window reads (32 words)
CONTAINED = 0.5  # the share of a window's shingles that puts it in a family
MIN_HITS = 4  # fewer shingles of one family than this match nothing, however short the text
SHARED = 2  # a family holding this many of a window's shingles counts in the families holding it
MAX_LOGGED = 1000  # text hashes one event keeps
EDITS = 2  # two one-word edits of one text differ in two words: both must be recognised


def _min_words() -> int:
    """The fewest words at which two texts that differ in ``EDITS`` words (two one-word
    edits of one text, which a scrubber asks without ever asking the text) still share
    ``MIN_HITS`` shingles, and no fewer than ``CONTAINED`` of the window: a changed word is in
    at most ``SHINGLE`` shingles."""
    words = SHINGLE
    while True:
        count = words - SHINGLE + 1
        shared = count - EDITS * SHINGLE
        if shared >= max(MIN_HITS, math.ceil(CONTAINED * min(WINDOW, count))):
            return words
        words += 1


MIN_WORDS = _min_words()  # the public minimum (14 words): shorter texts are not answered
# Scripts written without spaces (Han, kana): each character is a word, so a sentence of
# Chinese or Japanese has as many shingles as characters, as a sentence of English has words.
_UNSPACED = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff"
_WORD = re.compile(rf"[{_UNSPACED}]|[^\W{_UNSPACED}]+", re.UNICODE)

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


class TextLimit(ProblemError):
    status_code = 429
    default_code = "text_limit"

    def __init__(self, retry_after: int) -> None:
        self.retry_after = retry_after
        super().__init__(
            "too many different texts were checked by this caller; answers stop for a while"
        )


class TooShort(ProblemError):
    """400 ``too_short``: under the public minimum, which the message states."""

    default_code = "too_short"

    def __init__(self, found: str) -> None:
        super().__init__(
            f"public verification answers texts of at least {MIN_WORDS} words and "
            f"{rule.MIN_TOKENS} tokens (under a published model's tokenizer); this one has "
            f"{found}"
        )


def words(text: str) -> list[str]:
    """The words of ``text`` as the guard reads them: runs of word characters, and each
    character of a script written without spaces (Han, kana), in the text as it is scored
    (without C2PA wrapper characters: read as word breaks, they would give each edit
    shingles of its own and a short piece more words)."""
    return _WORD.findall(without_wrappers(text)[0])


def public_minimum(text: str) -> None:
    """TooShort (400) for a text of fewer than ``MIN_WORDS`` words, whose one-word edits the
    guard could not recognise as one family: public verification answers none. (A text the
    decision calls too short, ``detector.decision.rule.too_short``, gets the same error once
    the published tokenizers counted its tokens: one minimum, one error.)"""
    count = len(words(text))
    if count < MIN_WORDS:
        raise TooShort(f"{count} words")


def shingles(text: str) -> list[bytes]:
    """The word 3-shingles of ``text`` in order (lower case; the whole text when shorter)."""
    lower = [w.lower() for w in words(text)] or [text]
    n = min(SHINGLE, len(lower))
    return [" ".join(lower[i : i + n]).encode() for i in range(len(lower) - n + 1)]


def guard_key() -> bytes:
    """The shingle hash's key: derived from ``SECRET_KEY`` (every process of one server
    agrees on it; a new secret starts new fingerprints), never stored or shown."""
    return _derived(settings.SECRET_KEY)


@lru_cache(maxsize=4)
def _derived(secret: str) -> bytes:
    return hashlib.sha256(b"provenance.public.guard:" + secret.encode()).digest()


def fingerprints(text: str) -> list[int]:
    """The shingles' 64-bit keyed hashes (BLAKE2b keyed with ``guard_key``), in the text's
    order (repeats included)."""
    key = guard_key()
    return [
        int.from_bytes(hashlib.blake2b(shingle, digest_size=8, key=key).digest(), "big")
        for shingle in shingles(text)
    ]


def _key(value: int) -> str:
    return f"public:guard:{value:016x}"


def matching(kept: list[int], owners: dict[int, str]) -> list[str]:
    """The families that one window of ``kept`` (``WINDOW`` shingles, or all of them
    when fewer) is contained in: at least ``CONTAINED`` of its shingles are that family's;
    or, where no one family holds that much, are held together by families each holding at
    least ``SHARED`` of them (a piece cut across two earlier pieces is in both).
    ``owners``: the family of each shingle seen before. Best first (most shingles)."""
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


def family_observe(
    text: str, text_sha256: str, requester: str = "", prefixes: Sequence[tuple[str, int]] = ()
) -> str:
    """Count ``text`` in its families for ``requester`` and for each of ``prefixes`` (the
    IPv6 prefixes around it, ``budgets.guard_prefixes``, each with its own cap), and return
    the family's id (the SHA-256 of its first text); VariantLimit once the requester, or one
    of its prefixes, has had its answers of one of them for the window."""
    store = public_cache()
    window = settings.PROVENANCE_PUBLIC_VARIANT_WINDOW_S
    kept = fingerprints(text)
    unique = list(dict.fromkeys(kept))
    found = store.get_many([_key(v) for v in unique])
    owners = {v: found[_key(v)] for v in unique if _key(v) in found}
    families = matching(kept, owners) or [text_sha256]
    family = families[0]
    # Every shingle written, a seen one with its family as it was (its window starts anew):
    # the same work whether or not anyone asked the text before, so the time of an answer
    # does not tell a requester that someone else did.
    store.set_many({_key(v): owners.get(v, family) for v in unique}, timeout=window)
    members = f"public:family:texts:{family}"
    hashes = store.get(members) or []
    if text_sha256 not in hashes and len(hashes) < MAX_LOGGED:
        hashes = [*hashes, text_sha256]
    store.set(members, hashes, window)
    # One more variant of the most-asked family, for the requester and for each prefix: each
    # family the text is in counts up to it (atomic increments, so concurrent checks only
    # ever count more).
    over: tuple[int, str] | None = None
    for who, cap in [(requester, settings.PROVENANCE_PUBLIC_MAX_VARIANTS), *prefixes]:
        counted, most = _variant_count(families, who)
        if counted > cap and over is None:
            over = (counted, most)
    if over is not None:
        _log_once(over[1], over[0], store.get(f"public:family:texts:{over[1]}") or hashes)
        raise VariantLimit(window)
    return str(family)


def _variant_count(families: list[str], who: str) -> tuple[int, str]:
    """Count one more variant of ``families`` for ``who``: the count of the most-asked one
    and its id."""
    store = public_cache()
    window = settings.PROVENANCE_PUBLIC_VARIANT_WINDOW_S
    counters = [f"public:family:count:{each}:{who}" for each in families]
    counts = []
    for counter in counters:
        store.add(counter, 0, window)
        counts.append(store.incr(counter))
    top = max(counts)
    for counter, count in zip(counters, counts, strict=True):
        if count < top:
            store.incr(counter, top - count)
    return top, families[counts.index(top)]


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


def texts_observe(requester: str, limit: int) -> None:
    """Count one more text answered to ``requester``, whatever its family; TextLimit once
    ``limit`` texts were answered to it in the window. Kept in the default cache, where
    nothing is evicted (as the budgets)."""
    window = settings.PROVENANCE_PUBLIC_VARIANT_WINDOW_S
    counter = f"public:texts:count:{requester}"
    cache.add(counter, 0, window)
    if cache.incr(counter) > limit:
        raise TextLimit(window)


def answered_before(text_sha256: str, requester: str) -> bool:
    """Whether ``requester`` was answered this very text within the window (asking it again
    learns nothing new: neither the guard nor the total counts it)."""
    return bool(public_cache().get(_answered_key(text_sha256, requester)))


def answered(text_sha256: str, requester: str) -> None:
    window = settings.PROVENANCE_PUBLIC_VARIANT_WINDOW_S
    public_cache().set(_answered_key(text_sha256, requester), 1, window)


def _answered_key(text_sha256: str, requester: str) -> str:
    return f"public:texts:answered:{requester}:{text_sha256}"


def guard(
    text: str,
    text_sha256: str,
    requester: str,
    max_texts: int,
    prefixes: Sequence[tuple[str, float, float]] = (),
) -> None:
    """The guard of one public text about to be answered to ``requester``: nothing when it
    was answered this text before (a marker in the public cache: an evicted one only counts
    the text once more), else its families' counts (VariantLimit) and the requester's total
    (TextLimit, at most ``max_texts``). ``prefixes``: the IPv6 prefixes around an anonymous
    requester (``budgets.guard_prefixes``: each with its weight in requesters for texts and
    for variants), each counted the same way, under ``max_texts`` and ``max_variants`` times
    its weights: the /64s of one /56 are one subscriber's, and buy no more variants of a text
    than one of them."""
    if answered_before(text_sha256, requester):
        return
    variants = settings.PROVENANCE_PUBLIC_MAX_VARIANTS
    fresh = [
        (who, int(max_texts * texts), int(variants * each))  # weights of one requester at least
        for who, texts, each in prefixes
        if not answered_before(text_sha256, who)  # another /64 of the prefix asked it
    ]
    family_observe(text, text_sha256, requester, [(who, cap) for who, _, cap in fresh])
    for who, limit in [(requester, max_texts), *((who, limit) for who, limit, _ in fresh)]:
        texts_observe(who, limit)
    for who in [requester, *(who for who, _, _ in fresh)]:
        answered(text_sha256, who)
