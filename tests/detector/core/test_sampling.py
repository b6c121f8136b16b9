"""The one top-k/top-p mask, pinned to vLLM's own PyTorch implementation."""

from __future__ import annotations

import pytest
import torch

from detector.core.sampling import top_k_top_p_mask


def _logits(rows: int, vocab: int, seed: int) -> torch.Tensor:
    return torch.randn(rows, vocab, generator=torch.Generator().manual_seed(seed)) * 2


def test_top_p_keeps_the_smallest_set_whose_mass_reaches_top_p():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    kept = torch.isfinite(top_k_top_p_mask(logits, None, 0.8)).tolist()
    assert kept == [[True, True, False, False]]  # 0.5 + 0.3 reaches 0.8
    kept = torch.isfinite(top_k_top_p_mask(logits, None, 0.81)).tolist()
    assert kept == [[True, True, True, False]]


def test_the_most_likely_token_always_survives():
    logits = _logits(5, 300, 1)
    masked = top_k_top_p_mask(logits, torch.tensor([1, 0, 0, 2, 0]), 1e-9)
    assert torch.isfinite(masked).sum(-1).tolist() == [1] * 5
    assert torch.equal(masked.argmax(-1), logits.argmax(-1))


def test_a_float_top_p_equals_the_same_value_per_row():
    logits = _logits(4, 500, 2).double()
    as_float = top_k_top_p_mask(logits, None, 0.9)
    as_rows = top_k_top_p_mask(logits, None, torch.full((4,), 0.9, dtype=torch.float64))
    assert torch.equal(as_float, as_rows)


@pytest.mark.vllm
def test_the_mask_equals_vllms_top_k_top_p():
    ops = pytest.importorskip("vllm.v1.sample.ops.topk_topp_sampler")
    logits = _logits(8, 777, 5)
    k = torch.tensor([0, 1, 5, 50, 777, 20, 2, 0])
    p = torch.tensor([0.9, 1.0, 0.5, 0.99, 0.3, 1.0, 1e-9, 0.05])
    theirs = ops.apply_top_k_top_p_pytorch(logits.clone(), torch.where(k == 0, 777, k), p)
    ours = top_k_top_p_mask(logits.clone(), k, p)
    assert torch.equal(ours, theirs)  # the kept logits unchanged, the rest -inf, as vLLM's
    theirs_p = ops.apply_top_k_top_p_pytorch(logits.clone(), None, p)
    assert torch.equal(top_k_top_p_mask(logits.clone(), None, p), theirs_p)
