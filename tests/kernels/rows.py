"""Adversarial logit rows shared by the sampler tests (seeded, built from the PRF itself)."""

from __future__ import annotations

import torch

from kernels import philox
from kernels.gumbel_sample import NOISE_HI
from kernels.utils import keys_tensor

NEG = float("-inf")


def tie_pair(key: int, context: list[int], vocab: int) -> tuple[int, int]:
    """Two token ids whose PRF uniforms are equal under (key, context): equal logits tie exactly."""
    keys = keys_tensor([key])
    state = philox.context_state(keys, torch.tensor([context]))
    mant = (philox.vocab_words(keys, state, vocab)[0] >> 8).tolist()
    seen: dict[int, int] = {}
    for token, m in enumerate(mant):
        if m in seen:
            return seen[m], token
        seen[m] = token
    raise AssertionError("no colliding pair; use a larger vocabulary")


def adversarial_rows(vocab: int, gen: torch.Generator) -> list[torch.Tensor]:
    """Rows that stress the pruning bound, ties and the special values."""
    flat = torch.zeros(vocab)
    peaked = torch.zeros(vocab)
    peaked[vocab // 3] = 30.0
    # Everyone sits right at the pruning boundary below the top logit.
    edge = -NOISE_HI + torch.rand(vocab, generator=gen) * 0.01 - 0.005
    edge[vocab // 2] = 0.0
    levels = torch.randint(0, 3, (vocab,), generator=gen).float() * 5.0  # many exact ties
    topk = torch.full((vocab,), NEG)
    topk[torch.randperm(vocab, generator=gen)[: min(50, vocab)]] = torch.randn(
        min(50, vocab), generator=gen
    )
    spread = torch.randn(vocab, generator=gen) * 8.0
    infs = torch.randn(vocab, generator=gen)
    infs[[vocab // 4, vocab // 2]] = float("inf")
    nans = torch.randn(vocab, generator=gen) * 3.0
    nans[torch.randperm(vocab, generator=gen)[: max(1, vocab // 3)]] = float("nan")
    all_neg = torch.full((vocab,), NEG)
    all_nan = torch.full((vocab,), float("nan"))
    return [flat, peaked, edge, levels, topk, spread, infs, nans, all_neg, all_nan]
