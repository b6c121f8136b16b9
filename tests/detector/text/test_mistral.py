"""The mistral-common built-ins: same ids as mistral-common's own tokenizers, offsets, hashes."""

from __future__ import annotations

import random

import numpy as np
import pytest

from detector.decision.text import detect_text
from detector.text import mistral
from detector.text.tokenizers import BUILTINS, load_tokenizer
from tests.detector.toy import keyed_sample

KEY = 42  # the key of vLLM's announcement (--watermark-config '{"algorithm":"gumbel","key":42}')

SAMPLES = [
    "The quick brown fox jumps over the lazy dog. It wasn't me, they'd said.",
    "  leading spaces, trailing spaces   and  double  spaces ",
    "def f(x):\n    return x ** 2  # square\n\n\tif x:\r\n        pass\n",
    'SELECT * FROM users WHERE id = 42;\n{"key": [1, 2, 3], "url": "https://a.example/?q=%20"}',
    "東京は日本の首都です。今日はいい天気ですね。",
    "我们今天去公园散步，天气很好。",
    "안녕하세요. 오늘 날씨가 좋네요!",
    "Emoji: 👩‍👩‍👧‍👦 🇯🇵 👍🏽 ❤️ 🫠 😀😀😀",
    "Café naïve résumé façade — “quotes” ‘single’ … 1234567 3.14159 ß İ ı",
    "<s>[INST] control tokens spelled out are text [/INST]</s> [TOOL_CALLS] <unk>",
    "",
    " ",
    "\n\n\n",
    "a" * 50 + " " + "b" * 37,
]


def _mixtures(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    alphabet = list("abcdefghijklmnopqrstuvwxyz ABCDEF\n\t.,;:!?'\"()[]{}<>0123456789_-=/\\")
    alphabet += list("東京日本語中文한국어ひらがなカタカナ") + ["👍", "🏽", "\u200d", "❤", "\ufe0f"]
    alphabet += ["é", "ß", "ı", "İ", "\u0301", "\x00", "\x7f", "  ", "▁"]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60))) for _ in range(count)]


def _reference(name: str):
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    tokenizer = MistralTokenizer.v3(is_tekken=name == mistral.MISTRAL_TEKKEN)
    return tokenizer.instruct_tokenizer.tokenizer


@pytest.fixture(scope="module", params=mistral.BUILTINS)
def pair(request):
    return load_tokenizer(request.param), _reference(request.param)


def test_the_builtins_are_named_sources_beside_the_default():
    assert set(BUILTINS) == {"default", "mistral-v3", "mistral-tekken"}


def test_ids_equal_mistral_commons_own_encoding(pair):
    tok, reference = pair
    texts = SAMPLES + _mixtures(400)
    for text in texts:
        expected = reference.encode(text, bos=False, eos=False)
        assert tok.encode(text).tolist() == expected, repr(text)


def test_special_token_spellings_stay_text(pair):
    tok, reference = pair
    specials = " ".join(reference.id_to_piece(i) for i in range(40))
    assert tok.encode(specials).tolist() == reference.encode(specials, bos=False, eos=False)
    assert min(tok.encode(specials)) > 2


def test_the_reference_doc_placeholders_are_single_tokens():
    # The documented difference: SentencePiece prepends its dummy "▁" once per text, the
    # converted tokenizer again after each placeholder; the placeholder itself is one token.
    tok, reference = load_tokenizer("mistral-v3"), _reference("mistral-v3")
    ids = tok.encode("x [REFERENCE_DOC_1] y").tolist()
    assert ids[:3] == reference.encode("x [REFERENCE_DOC_1] y", bos=False, eos=False)[:3]
    assert ids[2] == reference.encode("[REFERENCE_DOC_1]", bos=False, eos=False)[-1]


def test_vocabulary_sizes_and_content_hashes_are_fixed(pair):
    tok, reference = pair
    assert tok.vocab_size == reference.n_words
    assert len(tok.content_hash) == 64
    assert load_tokenizer(tok.name) is tok  # loaded once per process


def test_offsets_cover_each_tokens_characters_and_decoding_round_trips(pair):
    tok, _ = pair
    text = "Provenance checks texts, café and 東京 included 👍🏽.\nSecond line."
    ids, offsets = tok.encode_with_offsets(text)
    assert ids.shape[0] == offsets.shape[0] > 5
    assert offsets[-1, 1] == len(text)
    assert (np.diff(offsets[:, 0]) >= 0).all()
    assert tok.decode(ids) == text


def test_the_conversion_is_cached_under_the_data_dir(tmp_path, monkeypatch):
    from detector.text import tokenizers

    tok = load_tokenizer("mistral-v3")  # Tekken takes ~5 s to convert: the same code path
    monkeypatch.setenv("PROVENANCE_DATA_DIR", str(tmp_path))
    directory = tokenizers._convert_mistral(tok.name)
    assert directory.parent == tmp_path / "tokenizers"
    assert tokenizers._convert_mistral(tok.name) == directory  # second call converts nothing
    again = tokenizers._from_dir(directory, tok.name)
    assert again.content_hash == tok.content_hash


def test_a_text_watermarked_through_mistral_v3_is_detected():
    tok = load_tokenizer("mistral-v3")
    vocab = tok.vocabulary()
    words = np.array(
        sorted(i for t, i in vocab.items() if t.startswith("▁") and t[1:].isalpha() and len(t) > 4)
    )[:1000]
    logits = np.random.default_rng(5).normal(0, 1.5, size=(150, words.size))
    text = tok.decode(keyed_sample(KEY, logits, vocab_ids=words))
    result = detect_text(text, tok, [KEY, KEY + 1])
    assert result.is_watermarked and result.best == 0 and result.log10_p < -8
    assert result.tokenizer_hash == tok.content_hash
    human = "It was the best of times, it was the worst of times, it was the age of wisdom."
    assert not detect_text(human, tok, [KEY]).is_watermarked
