"""vLLM's top-k/top-p mask: the one implementation the generator and the model's reading share.

vLLM's PyTorch sampler (``vllm.v1.sample.ops.topk_topp_sampler.apply_top_k_top_p_pytorch``)
sorts each row ascending, drops the values below the k-th largest, then drops every token whose
cumulative probability from the bottom is at most ``1 - top_p``; the most likely token always
survives. ``tests/detector/core/test_sampling.py`` pins this function to vLLM's own.
"""

from __future__ import annotations

from typing import Any


def top_k_top_p_mask(logits: Any, top_k: Any = None, top_p: Any = None) -> Any:
    """``logits`` ``[rows, vocab]`` (torch) with what top-k/top-p drop set to -inf (a new tensor).

    ``top_k``: ``None`` (off) or an integer tensor ``[rows]`` where ``0``, negative values and
    values above the vocabulary mean off. ``top_p``: ``None`` (off), a float applied to every
    row, or a tensor ``[rows]``.
    """
    import torch

    vocab = logits.shape[-1]
    sorted_logits, order = logits.sort(dim=-1, descending=False)  # [rows, vocab]
    if top_k is not None:
        k = torch.where((top_k <= 0) | (top_k > vocab), vocab, top_k).to(torch.long)
        kth = sorted_logits.gather(1, (vocab - k).unsqueeze(1))  # [rows, 1]: smallest kept
        sorted_logits = sorted_logits.masked_fill(sorted_logits < kth, float("-inf"))
    if top_p is not None:
        cum = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        floor = (1 - top_p).unsqueeze(1) if isinstance(top_p, torch.Tensor) else 1.0 - top_p
        drop = cum <= floor
        drop[:, -1] = False  # the most likely token always survives
        sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
    return torch.empty_like(sorted_logits).scatter_(1, order, sorted_logits)
