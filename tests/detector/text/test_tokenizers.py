from __future__ import annotations

import numpy as np
import pytest

from detector.decision.text import detect_text
from detector.text.tokenizers import TokenizerError, load_tokenizer
from tests.detector.toy import keyed_sample

KEY = 987654321987654321


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer("default")


def test_the_embedded_tokenizer_is_smollm2_and_is_cached(tok):
    assert tok.vocab_size == 49152
    assert len(tok.content_hash) == 64
    assert load_tokenizer("default") is tok


def test_offsets_point_at_each_tokens_characters(tok):
    text = "Provenance checks texts, café and 東京 included.\nSecond line."
    ids, offsets = tok.encode_with_offsets(text)
    assert ids.shape[0] == offsets.shape[0] > 5
    assert np.array_equal(ids, tok.encode(text))
    assert offsets[0, 0] == 0 and offsets[-1, 1] == len(text)
    assert (np.diff(offsets[:, 0]) >= 0).all()
    assert tok.decode(ids) == text


def test_a_saved_directory_loads_to_the_same_tokenizer(tok, tmp_path):
    tok.hf.save_pretrained(str(tmp_path))
    again = load_tokenizer(tmp_path)
    assert again.content_hash == tok.content_hash
    assert np.array_equal(again.encode("hello world"), tok.encode("hello world"))


def test_unknown_sources_raise_a_clear_error(tmp_path):
    with pytest.raises(TokenizerError, match="no tokenizer"):
        load_tokenizer(tmp_path / "missing")
    (tmp_path / "x.txt").write_text("not a tokenizer")
    with pytest.raises(TokenizerError):
        load_tokenizer(tmp_path / "x.txt")


def word_vocabulary(tok, size=3000):
    """Ids of plain lower-case word pieces with a leading space: they re-tokenize stably."""
    vocab = tok.hf.get_vocab()
    words = sorted(
        i
        for t, i in vocab.items()
        if t.startswith("Ġ") and t[1:].isalpha() and t[1:].islower() and len(t) > 3
    )
    return np.array(words[:size])


def test_a_watermarked_text_is_detected_through_text_and_a_human_text_is_not(tok):
    words = word_vocabulary(tok)
    rng = np.random.default_rng(4)
    logits = rng.normal(0, 1.5, size=(150, words.size))
    text = tok.decode(keyed_sample(KEY, logits, vocab_ids=words))
    result = detect_text(text, tok, [KEY, KEY + 1])
    assert result.num_hypotheses == 2 and result.best == 0
    assert result.is_watermarked and result.log10_p < -8
    assert result.hypotheses[1].detection.p_value > 1e-3
    assert result.tokenizer_hash == tok.content_hash
    human = "It was the best of times, it was the worst of times, it was the age of wisdom."
    assert not detect_text(human, tok, [KEY, KEY + 1]).is_watermarked


def test_a_gguf_file_path_loads_the_same_tokenizer_as_the_default(tok):
    from detector.text.tokenizers import embedded_gguf_path

    by_path = load_tokenizer(embedded_gguf_path())
    assert by_path.content_hash == tok.content_hash
    assert by_path.name == "SmolLM2-135M-Instruct.Q4_1"
