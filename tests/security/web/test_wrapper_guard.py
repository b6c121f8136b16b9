# ruff: noqa: F811  (the public tests' fixtures, imported by name)
"""The public guard against C2PA wrapper characters hidden inside words.

Scoring leaves every C2PA text wrapper's characters out (``detector.text.wrapper``: U+FEFF
and at least 13 variation selectors), so a text with such a sequence inside each word is
scored as the text without them. The guard must read the same text: if it reads the
sequences as word breaks, every edit of a watermarked text can be given shingles of its own
(and short pieces extra words), so a scrubber's one-word edits, each scored as a plain edit,
never join one family."""

from __future__ import annotations

import pytest

from detector.text.wrapper import without_wrappers
from provenance.public import families, services
from tests.provenance.conftest import KEY_VALUE
from tests.provenance.public.conftest import (  # noqa: F401  (fixtures, found by name)
    _small_proof_of_work,
    published,
)
from tests.provenance.watermark import watermarked_text

pytestmark = pytest.mark.django_db
EDITS = ("zebra", "quartz", "lantern", "violet")
FAKE = "\ufeff" + "\ufe00" * 13  # wrapper-shaped: left out of every tokenization


def _hidden_breaks(words: list[str], salt: int) -> str:
    """Each word of two letters or more broken by ``FAKE`` at a place that varies with
    ``salt``: invisible, and gone before scoring."""
    out = []
    for j, word in enumerate(words):
        if len(word) < 2:
            out.append(word)
            continue
        at = 1 + (salt + j) % (len(word) - 1)
        out.append(word[:at] + FAKE + word[at:])
    return " ".join(out)


def test_hidden_breaks_are_no_words_to_the_guard():
    text = "the quick brown fox jumps over the lazy dog near the quiet river bank today"
    hidden = _hidden_breaks(text.split(), 0)
    assert without_wrappers(hidden)[0] == text  # what is scored
    assert families.words(hidden) == families.words(text)
    assert families.fingerprints(hidden) == families.fingerprints(text)


def test_a_short_piece_is_not_lengthened_past_the_minimum_by_hidden_breaks():
    piece = "the quick brown fox jumps over the lazy"
    with pytest.raises(families.TooShort):
        families.public_minimum(_hidden_breaks(piece.split(), 0))


def test_edits_with_hidden_breaks_are_capped_like_plain_edits(published, settings):
    settings.PROVENANCE_PUBLIC_MAX_VARIANTS = 20
    words = watermarked_text(KEY_VALUE, num_tokens=60, seed=3).split()[:24]
    answered = 0
    for i in range(40):
        edit = list(words)
        edit[i % len(edit)] = EDITS[(i // len(edit)) % len(EDITS)]
        caller = services.Caller(address="198.51.100.7")
        try:
            services.verify(
                caller=caller, text=_hidden_breaks(edit, i), ask_peers=False, admitted=True
            )
        except families.VariantLimit:
            continue
        answered += 1
    assert answered <= settings.PROVENANCE_PUBLIC_MAX_VARIANTS, answered
