"""The scrubbing guard: a loop of edited variants of one text is stopped after the documented
number, the event names the variants' hashes, unrelated texts pass, and a family's count is
kept per requester."""

from __future__ import annotations

import random

import pytest

from detector.reports.signed import text_sha256
from provenance.public.families import (
    VariantLimit,
    family_observe,
    fingerprints,
    matching,
    shingles,
)
from provenance.public.models import ScrubEvent
from tests.provenance.watermark import HUMAN_TEXT

LIMIT = 20


@pytest.fixture(autouse=True)
def _limit(settings) -> None:
    settings.PROVENANCE_PUBLIC_MAX_VARIANTS = LIMIT


def variants(text: str, count: int, seed: int = 0) -> list[str]:
    """A scrubbing loop: each variant swaps two more words of the previous one for others."""
    rng = random.Random(seed)
    words = text.split()
    out = []
    for _ in range(count):
        for _ in range(2):
            words[rng.randrange(len(words))] = rng.choice(["grey", "boats", "quietly", "sea"])
        out.append(" ".join(words))
    return out


def test_a_loop_of_500_variants_is_stopped_after_the_limit(db):
    answered = 0
    loop = variants(HUMAN_TEXT, 500)
    for variant in loop:
        try:
            family_observe(variant, text_sha256(variant), "address:a")
        except VariantLimit as exc:
            assert exc.status_code == 429 and exc.retry_after > 0
            continue
        answered += 1
    assert answered == LIMIT
    (event,) = ScrubEvent.objects.all()
    assert event.variants == 500
    assert sorted(event.text_hashes) == sorted({text_sha256(v) for v in loop})


def test_unrelated_texts_are_each_their_own_family(db):
    vocabulary = sorted(set(HUMAN_TEXT.lower().split()))
    texts = [" ".join(random.Random(i).choices(vocabulary, k=60)) for i in range(2 * LIMIT)]
    families = {family_observe(t, text_sha256(t)) for t in texts}
    assert len(families) == len(texts)
    assert not ScrubEvent.objects.exists()


def test_a_window_contained_in_a_family_matches_it_and_a_distant_text_does_not():
    a, b = variants(HUMAN_TEXT, 2)
    owners = dict.fromkeys(fingerprints(a), "family-a")
    assert matching(fingerprints(b), owners) == ["family-a"]
    assert matching(fingerprints("a train left the station at noon, late again"), owners) == []


def test_every_shingle_is_fingerprinted_the_same_in_every_text():
    kept = fingerprints(HUMAN_TEXT)
    assert len(kept) == len(shingles(HUMAN_TEXT)) == len(set(kept))
    assert set(fingerprints("Preface. " + HUMAN_TEXT)) >= set(kept)


def test_a_familys_count_is_kept_per_requester(db):
    loop = variants(HUMAN_TEXT, LIMIT + 5)
    for variant in loop[:LIMIT]:
        family_observe(variant, text_sha256(variant), "address:a")
    with pytest.raises(VariantLimit):
        family_observe(loop[LIMIT], text_sha256(loop[LIMIT]), "address:a")
    family_observe(HUMAN_TEXT, text_sha256(HUMAN_TEXT), "partner:1")  # another's: answered


def test_shingles_are_word_triples_or_the_whole_text_when_shorter():
    assert shingles("One two three four") == [b"one two three", b"two three four"]
    assert shingles("Hi there") == [b"hi there"]
