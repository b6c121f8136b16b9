"""Sampling with the spec's keyed rule from a toy model, for detection tests (no real model)."""

from __future__ import annotations

import numpy as np

from detector.core import prf
from detector.core.contexts import PAD


def toy_logits(rng: np.random.Generator, vocab: int, steps: int, temperature: float = 1.0):
    """Logits ``[steps, vocab]`` of a moderately high-entropy toy model."""
    return rng.normal(0.0, 2.0, size=(steps, vocab)) / temperature


def keyed_sample(
    key: int, logits: np.ndarray, width: int = 4, seed: int = 0, vocab_ids: np.ndarray | None = None
) -> np.ndarray:
    """Generate one token per row of ``logits`` with the keyed Gumbel-max draw.

    Column j of ``logits`` is token ``vocab_ids[j]`` (default: token j).

    Generation-time de-duplication is ``single_turn``: a context already seen in this sequence
    is sampled with ordinary randomness, as upstream does.
    """
    rng = np.random.default_rng(seed)
    steps, vocab = logits.shape
    ids = np.arange(vocab) if vocab_ids is None else np.asarray(vocab_ids)
    out: list[int] = []
    seen: set[tuple[int, ...]] = set()
    for step in range(steps):
        context = tuple(([PAD] * width + out)[-width:])
        if context in seen:
            noise = rng.gumbel(size=vocab)
        else:
            seen.add(context)
            u = prf.uniform(prf.uint32(key, np.tile(context, (vocab, 1)), ids))
            noise = -np.log(-np.log(u.astype(np.float32)))
        out.append(int(ids[np.argmax(logits[step] + noise)]))
    return np.asarray(out, np.int64)
