"""Mixed documents for localization tests: keyed-argmax spans planted inside human text.

Human tokens come from ``benchmarks.corpus`` (real English prose) tokenized with SmolLM2's
tokenizer; each planted span is sampled with the spec's keyed Gumbel argmax from a fixed toy
distribution (``tests.detector.toy``) whose temperature puts the watermark's signal per token
in the range of real model text: mean score about 2.8 against 1 for human text (120 SmolLM2
tokens at T=1 inside 1,200 human ones test at a median log10 p of -11.5, which implies
about 3).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from tests.detector.toy import keyed_sample, toy_logits

VOCAB = 2000
TEMPERATURE = 0.4  # toy logits are N(0, 2) / T: mean watermarked score about 2.8


@lru_cache(maxsize=1)
def human_ids() -> np.ndarray:
    """About 250 K token ids of real prose."""
    from benchmarks.corpus import english_prose
    from detector.text.tokenizers import load_tokenizer

    return load_tokenizer("default").encode(english_prose())


def watermark_ids(key: int, length: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed, 1])
    vocab = rng.choice(49152, VOCAB, replace=False)
    logits = toy_logits(rng, VOCAB, length, temperature=TEMPERATURE)
    return keyed_sample(key, logits, seed=seed, vocab_ids=vocab)


@dataclass(frozen=True)
class Planted:
    ids: np.ndarray
    spans: list[tuple[int, int]]  # token positions [start, end) of each planted span


def plant(key: int, num_human: int, lengths: list[int], seed: int) -> Planted:
    """``lengths`` spans spread at random through ``num_human`` human tokens."""
    rng = np.random.default_rng([seed, 2])
    human = human_ids()
    offset = int(rng.integers(0, human.shape[0] - num_human))
    body = human[offset : offset + num_human]
    slots = np.arange(50, num_human - 50, 150)  # at least 150 human tokens between spans
    cuts = np.sort(rng.choice(slots, len(lengths), replace=False))
    parts, spans, pos, prev = [], [], 0, 0
    for k, (cut, length) in enumerate(zip(cuts, lengths, strict=True)):
        parts.append(body[prev:cut])
        pos += cut - prev
        parts.append(watermark_ids(key, length, seed * 100 + k))
        spans.append((pos, pos + length))
        pos += length
        prev = cut
    parts.append(body[prev:])
    return Planted(np.concatenate(parts).astype(np.int64), spans)
