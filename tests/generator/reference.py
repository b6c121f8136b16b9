"""A slow, obviously-correct keyed draw over ``detector.core.prf``, for pinning the generator.

Mirrors vLLM's CPU ``GumbelWatermarker``: float32 uniforms clamped at the smallest normal,
noise ``-log(-log(u))`` in float32, ``argmax(logits + noise)`` (lowest id on ties).
"""

from __future__ import annotations

import numpy as np
import torch

from detector.core import prf


def keyed_argmax(logits: torch.Tensor, key: int, context: list[int]) -> int:
    vocab = logits.shape[-1]
    ctx = np.tile(np.asarray(context, dtype=np.int64), (vocab, 1))
    u = torch.from_numpy(prf.uniform(prf.uint32(key, ctx, np.arange(vocab))))
    u = u.clamp_min(torch.finfo(torch.float32).tiny)
    noise = -torch.log(-torch.log(u))
    row = logits.to(torch.float32).nan_to_num(nan=float("-inf"))
    return int(torch.argmax(row + noise))


def reference_gumbel_sample(
    logits, keys, contexts, watermark_mask, fallback_noise=None, generator=None
):
    """Same signature as ``kernels.gumbel_sample``; unmasked rows sample the softmax."""
    out = torch.empty(logits.shape[0], dtype=torch.int64)
    for i in range(logits.shape[0]):
        if bool(watermark_mask[i]):
            key = int(keys[i]) & ((1 << 64) - 1)
            out[i] = keyed_argmax(logits[i], key, [int(c) for c in contexts[i]])
        else:
            probs = logits[i].float().nan_to_num(nan=float("-inf")).softmax(-1)
            out[i] = torch.multinomial(probs, 1, generator=generator)[0]
    return out
