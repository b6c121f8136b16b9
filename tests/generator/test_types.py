"""What a backend is asked for and answers (generator/types.py)."""

from __future__ import annotations

import pytest

from generator.core import SamplingSettings
from generator.types import Generation, GenerationRequest


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": 8193}, "max_tokens"),
        ({"max_tokens": True}, "integer"),  # a bool is an int to Python, not to the API
        ({"max_tokens": 12.0}, "integer"),
        ({"sampling": SamplingSettings(temperature=-0.1)}, "temperature"),
        ({"sampling": SamplingSettings(top_p=0.0)}, "top_p"),
        ({"sampling": SamplingSettings(top_p=1.01)}, "top_p"),
    ],
)
def test_a_request_outside_the_limits_is_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        GenerationRequest(prompt="hi", **changes)


def test_the_limits_themselves_are_accepted():
    GenerationRequest(max_tokens=1, sampling=SamplingSettings(temperature=0.0, top_p=1.0))
    GenerationRequest(max_tokens=8192, sampling=SamplingSettings(top_p=1e-6))


def test_the_extra_args_name_the_key_or_opt_out():
    assert GenerationRequest().extra_args() == {}  # the store's default key
    assert GenerationRequest(key_name="team-a").extra_args() == {"watermark_key": "team-a"}
    opted_out = GenerationRequest(key_name="team-a", watermark=False)
    assert opted_out.extra_args() == {"watermarking": False}  # the opt-out wins over a name


def test_the_provenance_of_a_generation_names_the_key_never_its_value():
    g = Generation(
        text="hello",
        token_ids=(1, 2),
        prompt_token_ids=(3,),
        key_name="team-a",
        watermarked=True,
        model="smollm2",
        tokenizer_hash="ab" * 32,
        finish_reason="length",
        expected_log10_p=-12.5,
    )
    assert g.provenance() == {
        "key": "team-a",
        "watermarked": True,
        "model": "smollm2",
        "tokenizer_hash": "ab" * 32,
        "expected_log10_p": -12.5,
    }
