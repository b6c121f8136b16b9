"""A C2PA text wrapper's characters are no words: left out of every tokenization, with
offsets taken back to the text as given."""

from __future__ import annotations

import numpy as np
import pytest

from detector.credentials.certificates import development_certificate
from detector.credentials.manifest import Generation
from detector.credentials.signing import wrapper_for
from detector.text.tokenizers import load_tokenizer, offsets_of
from detector.text.wrapper import WRAPPER, restore_offsets, without_wrappers


@pytest.fixture(scope="module")
def wrapper():
    dev = development_certificate("Acme")
    return wrapper_for("x", dev.credential, Generation("m", "Acme", "k"))


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("default")


def test_a_wrapper_is_found_and_left_out_wherever_it_stands(wrapper):
    assert WRAPPER.fullmatch(wrapper)
    text = "Rain on the roof." + wrapper
    assert without_wrappers(text) == ("Rain on the roof.", ((17, len(wrapper)),))
    two = "One." + wrapper + " Two." + wrapper
    left, removed = without_wrappers(two)
    assert left == "One. Two." and removed == ((4, len(wrapper)), (9, len(wrapper)))
    assert without_wrappers("plain \ufeff text") == ("plain \ufeff text", ())  # a lone BOM stays
    assert without_wrappers("emoji \u2764\ufe0f") == ("emoji \u2764\ufe0f", ())


def test_offsets_are_taken_back_past_each_removed_wrapper():
    offsets = np.array([[0, 3], [3, 4], [4, 8], [8, 9]], np.int64)
    back = restore_offsets(offsets, ((4, 100),))
    assert back.tolist() == [[0, 3], [3, 4], [104, 108], [108, 109]]
    assert restore_offsets(offsets, ()) is offsets


def test_the_tokenizer_scores_the_words_alone_and_points_at_them(tokenizer, wrapper):
    text = "The heron waits." + wrapper + " The river moves on."
    plain = "The heron waits. The river moves on."
    assert tokenizer.encode(text).tolist() == tokenizer.encode(plain).tolist()
    ids, encoding = tokenizer.encode_lazy(text)
    offsets = offsets_of(encoding)
    words = [text[a:b] for a, b in offsets]
    assert "".join(words) == plain
    assert not any(WRAPPER.search(word) or "\ufeff" in word for word in words)
