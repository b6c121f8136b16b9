from __future__ import annotations

import numpy as np
import pytest

from detector.core.config import KeyConfig
from detector.decision.rule import flags
from detector.decision.text import detect_text
from detector.evidence.localize import char_range
from detector.text.tokenizers import load_tokenizer
from tests.provenance.watermark import watermarked_text

KEY = 0x1234_5678_9ABC
CJK = "水面に映る月の光が静かに揺れて、古い寺の鐘が遠くで鳴った。" * 20
EMOJI = "Party time 🎉🎉 with family 👨‍👩‍👧‍👦 and cake 🍰, then rain 🌧️ all night. " * 20


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("default")


@pytest.fixture(scope="module")
def mixed():
    return CJK + " " + watermarked_text(KEY, 160, seed=3) + " " + EMOJI


def test_character_offsets_of_a_span_are_exact_around_cjk_and_emoji(tokenizer, mixed):
    found = detect_text(mixed, tokenizer, [KEY])
    assert found.is_watermarked and len(found.spans) == 1
    span = found.spans[0]
    segment = (len(CJK), len(mixed) - len(EMOJI))  # where the watermarked words lie
    assert segment[0] <= span.start_char < span.end_char <= segment[1] + 1
    assert abs(span.start_char - segment[0]) <= 60 and abs(span.end_char - segment[1]) <= 60
    decoded = tokenizer.decode(found.token_ids[span.start : span.end])
    assert mixed[span.start_char : span.end_char].strip() == decoded.strip()


def test_character_ranges_cover_split_multibyte_characters(tokenizer):
    text = "🎉水" * 5 + "👨‍👩‍👧‍👦"
    ids, offsets = tokenizer.encode_with_offsets(text)
    for start in range(len(ids)):
        for end in range(start + 1, len(ids) + 1):
            a, b = char_range(offsets, start, end)
            piece = text[a:b]
            assert tokenizer.decode(ids[start:end]).replace("\ufffd", "") in piece


def test_several_keys_are_corrected_and_spans_name_their_key(tokenizer, mixed):
    configs = [KeyConfig(key=KEY + 1, name="other"), KeyConfig(key=KEY, name="ours")]
    found = detect_text(mixed, tokenizer, configs)
    assert found.is_watermarked and found.best == 1 and found.num_hypotheses == 2
    assert [s.key_name for s in found.spans] == ["ours"]
    alone = detect_text(mixed, tokenizer, [KEY])
    assert found.spans[0].log10_p == pytest.approx(
        min(0.0, alone.spans[0].log10_p + np.log10(2)), abs=1e-9
    )
    first = found.localizations[0]
    assert not flags(first.log10_p, first.threshold, first.detection.num_scored_tokens)


def test_human_text_in_several_scripts_gives_no_span(tokenizer):
    found = detect_text(CJK + EMOJI, tokenizer, [KEY, KEY + 1])
    assert found.spans == () and not found.is_watermarked


def test_it_rejects_bytes_and_an_empty_key_list(tokenizer):
    with pytest.raises(ValueError):
        detect_text(b"abc", tokenizer, [KEY])  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        detect_text("abc", tokenizer, [])
