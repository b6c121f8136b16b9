"""The V1 processor's batch bookkeeping, driven with vLLM's own BatchUpdate (no engine)."""

from __future__ import annotations

import json

import pytest
import torch

from tests.generator.reference import keyed_argmax

pytestmark = pytest.mark.vllm
interface = pytest.importorskip("vllm.v1.sample.logits_processor")
from vllm import SamplingParams  # noqa: E402

from generator.vllm_v1 import WatermarkLogitsProcessor  # noqa: E402

KEY_A, KEY_B = 0x0102030405060708, 0x0807060504030201


@pytest.fixture
def keys(tmp_path, monkeypatch):
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"a": {"key": KEY_A}, "b": {"key": KEY_B}}))
    monkeypatch.setenv("PROVENANCE_KEYS_FILE", str(path))
    return path


def _update(size, removed=(), added=(), moved=()):
    return interface.BatchUpdate(
        batch_size=size, removed=list(removed), added=list(added), moved=list(moved)
    )


def _finite(out: torch.Tensor, row: int) -> list[int]:
    return torch.isfinite(out[row]).nonzero().flatten().tolist()


def test_rows_keep_their_keys_through_moves_and_swaps(keys):
    proc = WatermarkLogitsProcessor(None, torch.device("cpu"), False)
    out_a, out_b = [3, 4], [9]
    proc.update_state(
        _update(
            3,
            added=[
                (0, SamplingParams(extra_args={"watermark_key": "a"}), [1], out_a),
                (1, SamplingParams(extra_args={"watermarking": False}), [1], []),
                (2, SamplingParams(extra_args={"watermark_key": "b"}), [1], out_b),
            ],
        )
    )
    proc.update_state(_update(3, moved=[(0, 2, interface.MoveDirectionality.SWAP)]))
    logits = torch.randn(3, 64)
    out = proc.apply(logits.clone())
    assert _finite(out, 2) == [keyed_argmax(logits[2], KEY_A, [-1, -1, 3, 4])]
    assert _finite(out, 0) == [keyed_argmax(logits[0], KEY_B, [-1, -1, -1, 9])]
    assert torch.equal(out[1], logits[1])
    proc.update_state(
        _update(2, removed=[2], moved=[(0, 2, interface.MoveDirectionality.UNIDIRECTIONAL)])
    )
    out = proc.apply(logits.clone())
    assert _finite(out, 2) == [keyed_argmax(logits[2], KEY_B, [-1, -1, -1, 9])]
    assert torch.isfinite(out[0]).all()


def test_the_live_output_list_moves_the_context_forward(keys):
    proc = WatermarkLogitsProcessor(None, torch.device("cpu"), False)
    out: list[int] = []
    proc.update_state(
        _update(1, added=[(0, SamplingParams(extra_args={"watermark_key": "a"}), [], out)])
    )
    for _ in range(6):
        logits = torch.randn(1, 40)
        token = _finite(proc.apply(logits.clone()), 0)
        assert token == [keyed_argmax(logits[0], KEY_A, ([-1] * 4 + out)[-4:])]
        out.append(token[0])


def test_a_key_added_to_the_file_after_start_is_picked_up(keys):
    proc = WatermarkLogitsProcessor(None, torch.device("cpu"), False)
    keys.write_text(json.dumps({"a": {"key": KEY_A}, "c": {"key": 77}}))
    proc.update_state(
        _update(1, added=[(0, SamplingParams(extra_args={"watermark_key": "c"}), [], [])])
    )
    logits = torch.randn(1, 30)
    assert _finite(proc.apply(logits.clone()), 0) == [keyed_argmax(logits[0], 77, [-1] * 4)]


def test_validation_refuses_an_unknown_name_with_a_value_error(keys):
    with pytest.raises(ValueError, match="zzz"):
        WatermarkLogitsProcessor.validate_params(
            SamplingParams(extra_args={"watermark_key": "zzz"})
        )
