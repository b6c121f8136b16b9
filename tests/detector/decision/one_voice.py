"""The one-voice corpus: texts every surface must answer alike (``test_decide`` for the
library and the CLI, ``tests/provenance/test_one_voice.py`` for the web).

``mixed`` is about 1,200 human tokens with ten watermarked words inside: under ``KEY`` the
global Gamma test alone misses it (its p-value is above the threshold) and the span scan
finds it, the case where a decision made two ways gave opposite answers. ``brief`` is twelve
watermarked tokens: a check decides it (watermarked), public verification answers it untested
(under the decision's ``MIN_TOKENS``).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

from tests.provenance.watermark import HUMAN_TEXT, watermarked_text

KEY = int.from_bytes(hashlib.sha256(b"one voice").digest()[:8], "big") | (1 << 63)


@lru_cache(maxsize=4)
def corpus(key: int = KEY) -> dict[str, str]:
    """Mixed (human with watermarked words inside), wholly watermarked, human, short, tiny and
    brief (twelve watermarked tokens)."""
    from benchmarks.corpus import english_prose
    from detector.text.tokenizers import load_tokenizer

    tok = load_tokenizer("default")
    prose = english_prose()
    human = tok.decode(list(tok.encode(prose[:12000])[:1200]))
    cut = human.rfind(" ", 0, len(human) // 2)
    mixed = human[:cut] + " " + _words(key) + human[cut:]
    return {
        "mixed": mixed,
        "marked": watermarked_text(key, 150, seed=7),
        "human": tok.decode(list(tok.encode(prose[40000:50000])[:600])),
        "short": HUMAN_TEXT,
        "tiny": "Thanks, see you tomorrow.",
        "brief": watermarked_text(key, 12, seed=3),
    }


def _words(key: int) -> str:
    return watermarked_text(key, 10, seed=0)


def mixed_range(key: int = KEY) -> tuple[int, int]:
    """Character range ``[start, end)`` of the watermarked words inside ``mixed``."""
    mixed, words = corpus(key)["mixed"], _words(key)
    start = mixed.index(" " + words) + 1
    return start, start + len(words)
