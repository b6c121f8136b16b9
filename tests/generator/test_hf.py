"""The transformers backend, and the core on real model logits."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from detector.core.config import KeyConfig
from detector.evidence.detection import detect_ids
from generator.config import KeyStore
from generator.core import RowState, SamplingSettings, keyed_draw, process_logits
from generator.types import GenerationRequest

KEY = 0x1234_5678_9ABC_DEF0
PROMPT = ({"role": "user", "content": "Tell me a long story about a fox who learns to sail."},)


def _tiny_model(vocab: int = 24):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=32,
    )
    return LlamaForCausalLM(config).eval()


def test_over_many_keys_the_first_token_follows_the_models_softmax():
    """Non-distortion: the keyed draw is a sample from the model's distribution over keys."""
    model = _tiny_model()
    with torch.inference_mode():
        logits = model(torch.tensor([[1, 2, 3]])).logits[0, -1].float() * 4  # sharpen a little
    probs = logits.softmax(-1).double().numpy()
    n = 6000
    keys = np.random.default_rng(1).integers(0, 2**63, n, dtype=np.int64).tolist()
    rows = [RowState(KeyConfig(key=k), SamplingSettings(), [1, 2, 3], []) for k in keys]
    tokens = keyed_draw(logits.expand(n, -1).contiguous(), rows)
    counts = np.bincount(tokens.numpy(), minlength=len(probs))
    keep = probs * n >= 5  # chi-square needs expected counts >= 5: pool the rest
    observed = np.append(counts[keep], counts[~keep].sum())
    expected = np.append(probs[keep] * n, probs[~keep].sum() * n)
    if expected[-1] < 5:
        observed, expected = (
            observed[:-1],
            expected[:-1] * observed[:-1].sum() / expected[:-1].sum(),
        )
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_one_key_is_far_from_the_softmax_for_a_fixed_context():
    # The same check must be able to fail: one key and one context always give one token.
    logits = torch.randn(24)
    rows = [RowState(KeyConfig(key=KEY), SamplingSettings(), [], []) for _ in range(50)]
    assert len(set(keyed_draw(logits.expand(50, -1).contiguous(), rows).tolist())) == 1


@pytest.fixture(scope="module")
def backend():
    from generator.hf import TransformersBackend

    store = KeyStore.from_mapping({"team-a": {"key": KEY}, "team-b": {"key": 5}})
    return TransformersBackend(store)


@pytest.mark.slow
def test_the_transformers_backend_watermarks_64_tokens_detectably(backend):
    # Sampling is the keyed argmax, so this reply is the same in every run: p is about 1e-35
    # at 60 tokens, 1e-123 at 200.
    g = backend.generate(
        [GenerationRequest(messages=PROMPT, max_tokens=64, key_name="team-a", ignore_eos=True)]
    )[0]
    assert len(g.token_ids) == 64 and g.watermarked and g.key_name == "team-a"
    assert detect_ids(list(g.token_ids), KEY).p_value < 1e-6
    assert detect_ids(list(g.token_ids), 5).p_value > 1e-3
    assert g.model == "smollm2-135m-instruct" and len(g.tokenizer_hash) == 64


@pytest.mark.slow
def test_opted_out_and_greedy_requests_carry_no_watermark(backend):
    reqs = [
        GenerationRequest(messages=PROMPT, max_tokens=60, watermark=False, ignore_eos=True),
        GenerationRequest(
            messages=PROMPT,
            max_tokens=20,
            key_name="team-a",
            sampling=SamplingSettings(temperature=0.0),
        ),
    ]
    off, greedy = backend.generate(reqs)
    assert not off.watermarked and off.key_name is None
    assert detect_ids(list(off.token_ids), KEY).p_value > 1e-3
    assert not greedy.watermarked
    again = backend.generate([reqs[1]])[0]
    assert again.token_ids == greedy.token_ids


@pytest.mark.slow
def test_streaming_yields_a_growing_completion(backend):
    steps = list(
        backend.stream(
            GenerationRequest(prompt="Once upon a time", max_tokens=8, key_name="team-b")
        )
    )
    assert [len(s.token_ids) for s in steps] == list(range(1, len(steps) + 1))
    assert steps[-1].finish_reason in ("stop", "length")


@pytest.mark.slow
@pytest.mark.vllm
def test_on_smollm2_logits_our_tokens_equal_vllms_cpu_watermarker(backend):
    watermarking = pytest.importorskip("vllm.v1.watermarking")
    ids = backend.encode_prompt(GenerationRequest(messages=PROMPT))
    text = backend.tokenizer(
        "Once there was a fox who dreamed of the sea.", add_special_tokens=False
    )["input_ids"]
    with torch.inference_mode():
        logits = (
            backend.model(torch.tensor([ids + text])).logits[0, len(ids) - 1 :].float()
        )  # [n, V]
    outputs = [text[:i] for i in range(logits.shape[0])]
    sampling = SamplingSettings(temperature=0.7, top_p=0.9)
    rows = [
        RowState(KeyConfig(key=KEY, deduplicate_contexts="none"), sampling, ids, o) for o in outputs
    ]
    processed = process_logits(logits, rows, penalties=True)
    theirs = watermarking.GumbelWatermarker(KEY, 4).sample(
        processed, torch.tensor([r.context() for r in rows])
    )
    assert keyed_draw(processed, rows).tolist() == theirs.token_ids.tolist()
