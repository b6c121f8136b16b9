"""Our core against vLLM's own CPU watermarker and repeated-context reference (the top-k/top-p
mask: tests/detector/core/test_sampling.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from detector.core.config import KeyConfig
from generator.core import RowState, SamplingSettings, keyed_draw, process_logits

pytestmark = pytest.mark.vllm
watermarking = pytest.importorskip("vllm.v1.watermarking")

KEY = 0xFEDCBA9876543210


def _rows(outputs, sampling=None, **settings):
    s = KeyConfig(key=KEY, **settings)
    return [RowState(s, sampling or SamplingSettings(), [], o) for o in outputs]


def test_our_tokens_equal_vllms_cpu_watermarker_token_for_token():
    gen = torch.Generator().manual_seed(3)
    rng = np.random.default_rng(3)
    outputs = [rng.integers(0, 49152, rng.integers(0, 9)).tolist() for _ in range(24)]
    logits = torch.randn(len(outputs), 49152, generator=gen) * 4  # SmolLM2's vocab size
    sampling = SamplingSettings(temperature=0.8, top_p=0.95)
    rows = _rows(outputs, sampling, deduplicate_contexts="none")
    processed = process_logits(logits, rows, penalties=True)
    ours = keyed_draw(processed, rows)
    contexts = torch.tensor([r.context() for r in rows])
    theirs = watermarking.GumbelWatermarker(KEY, 4).sample(processed, contexts).token_ids
    assert ours.tolist() == theirs.tolist()


@pytest.mark.parametrize("scope", ["single_turn", "all"])
def test_our_repeated_contexts_equal_vllms_reference(scope):
    from vllm.v1.worker.gpu.sample.watermark import _repeated_context_mask_cpu

    rng = np.random.default_rng(11)
    for max_history in (None, 4):
        prompts = [rng.integers(0, 3, rng.integers(1, 6)).tolist() for _ in range(8)]
        outputs = [rng.integers(0, 3, rng.integers(0, 12)).tolist() for _ in range(8)]
        rows = [
            RowState(
                KeyConfig(
                    key=KEY,
                    context_width=2,
                    deduplicate_contexts=scope,
                    deduplicate_contexts_max_history=max_history,
                ),
                SamplingSettings(),
                p,
                o,
            )
            for p, o in zip(prompts, outputs, strict=True)
        ]
        width = max(len(p) + len(o) for p, o in zip(prompts, outputs, strict=True))
        all_ids = torch.full((8, width), -7, dtype=torch.int64)
        for i, (p, o) in enumerate(zip(prompts, outputs, strict=True)):
            all_ids[i, : len(p) + len(o)] = torch.tensor(p + o)
        theirs = _repeated_context_mask_cpu(
            all_ids,
            torch.arange(8),
            torch.tensor([len(p) for p in prompts]),
            torch.tensor([len(p) + len(o) for p, o in zip(prompts, outputs, strict=True)]),
            torch.tensor([r.context() for r in rows]),
            max_history,
            include_prompt=scope == "all",
            skip_partial_context=scope == "all",
        )
        assert [r.repeated() for r in rows] == theirs.tolist()
