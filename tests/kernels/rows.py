"""Adversarial logit rows shared by the sampler tests (seeded, built from the PRF itself)."""

from __future__ import annotations

import torch

from kernels import philox
from kernels.gumbel_sample import gumbel_noise
from tests.kernels.prf_words import keys_tensor

NEG = float("-inf")


# Bounds of the Gumbel noise a 24-bit uniform can give (word 0xFFFFFFFF: u = 1 - 2**-24 gives
# the largest, 16.636; word 0: the smallest, -2.812), with a margin far above float32 rounding.
NOISE_HI = float(gumbel_noise(philox.uniform(torch.tensor([0xFFFFFFFF])))[0]) + 1e-3
NOISE_LO = float(gumbel_noise(philox.uniform(torch.tensor([0])))[0]) - 1e-3


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


def extreme_row(key: int, vocab: int, contexts: int) -> tuple[list[int], torch.Tensor, int]:
    """(context, logits, winner): the sharpest test of the pruning bound findable cheaply.

    Among ``contexts`` contexts, take the one whose largest and smallest Gumbel noises are
    furthest apart (g_hi on token a, g_lo on token b). The row puts b at logit 0 and a at
    ``g_lo - g_hi + 1e-3``, everything else at -inf: a wins by 1e-3, sitting only
    ``(NOISE_HI - NOISE_LO) - (g_hi - g_lo)`` below the bar. A bound tighter by that slack
    would prune the winner.
    """
    best = (-1.0, 0, 0, 0, 0.0, 0.0)
    chunk = 64
    for start in range(0, contexts, chunk):
        ctx = torch.arange(start, start + chunk)[:, None] + torch.arange(4)  # [chunk, 4]
        keys = keys_tensor([key] * chunk)
        g = gumbel_noise(
            philox.uniform(philox.vocab_words(keys, philox.context_state(keys, ctx), vocab))
        )
        hi, a = g.max(dim=-1)
        lo, b = g.min(dim=-1)
        r = int(torch.argmax(hi - lo))
        if float(hi[r] - lo[r]) > best[0]:
            best = (
                float(hi[r] - lo[r]),
                start + r,
                int(a[r]),
                int(b[r]),
                float(hi[r]),
                float(lo[r]),
            )
    _, c, a, b, g_hi, g_lo = best
    row = torch.full((vocab,), NEG)
    row[b] = 0.0
    row[a] = g_lo - g_hi + 1e-3
    return [c, c + 1, c + 2, c + 3], row, a
