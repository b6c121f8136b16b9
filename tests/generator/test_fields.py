"""The gate's allowlist of request fields (generator.fields): every field of vLLM's request
models decided, unknown ones refused, malformed values a 400, steering values listed."""

from __future__ import annotations

import pytest

from generator import fields
from generator.fields import FIELDS, FieldRefused, check

CHAT = {"messages": [{"role": "user", "content": "Hi"}]}
COMPLETION = {"prompt": "Hi"}


def test_a_plain_request_passes_with_nothing_steering():
    body = CHAT | {
        "model": "m",
        "max_tokens": 20,
        "temperature": 0.8,
        "top_p": 0.95,
        "stream": True,
        "stream_options": {"include_usage": True},
        "seed": 3,
        "stop": ["\n\n"],
        "return_token_ids": True,
        "vllm_xargs": {"watermark_key": "team-a"},
        # neutral values client libraries send explicitly
        "logprobs": False,
        "n": 1,
        "echo": False,
        "logit_bias": {},
        "response_format": {"type": "text"},
        "tool_choice": "none",
        "frequency_penalty": 0.5,
    }
    assert check(body, chat=True) == []
    assert check(COMPLETION | {"logprobs": None, "top_k": 40}, chat=False) == []


@pytest.mark.parametrize(
    "extra",
    [
        {"logprobs": True},
        {"logprobs": 0},  # the sampled token's own probability
        {"top_logprobs": 5},
        {"prompt_logprobs": 0},
        {"echo": True},
        {"logit_bias": {"42": 100}},
        {"allowed_token_ids": [1, 2]},
        {"bad_words": ["the"]},
        {"structured_outputs": {"choice": ["yes", "no"]}},
        {"response_format": {"type": "json_object"}},
        {"n": 2},
        {"best_of": 3},
        {"tool_choice": "required"},
        {"logprob_token_ids": [5]},
        {"frequency_penalty": -2},
        {"presence_penalty": -1},
        {"repetition_penalty": 0.5},
    ],
)
def test_each_way_to_see_or_steer_the_distribution_is_listed(extra):
    assert check(CHAT | extra, chat=True) == list(extra)


@pytest.mark.parametrize(
    "name",
    [
        "guided_json",
        "guided_regex",
        "guided_choice",
        "guided_grammar",
        "chat_template",
        "chat_template_kwargs",
        "mm_processor_kwargs",
        "kv_transfer_params",
        "priority",
        "request_id",
        "prompt_embeds",
        "suffix",
        "reasoning_effort",
        "invented_field",
    ],
)
def test_a_field_not_on_the_list_is_a_403_naming_it(name):
    with pytest.raises(FieldRefused) as refused:
        check(CHAT | {name: "x"}, chat=True)
    assert refused.value.status == 403 and name in refused.value.message


def test_a_field_of_the_other_route_is_refused():
    with pytest.raises(FieldRefused, match="'prompt'"):
        check(CHAT | {"prompt": "x"}, chat=True)
    with pytest.raises(FieldRefused, match="'messages'"):
        check(COMPLETION | {"messages": CHAT["messages"]}, chat=False)


@pytest.mark.parametrize(
    ("extra", "name"),
    [
        ({"temperature": "0.7"}, "temperature"),
        ({"temperature": True}, "temperature"),
        ({"temperature": 9}, "temperature"),
        ({"top_p": 0}, "top_p"),
        ({"top_k": 2.5}, "top_k"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": 10**6}, "max_tokens"),
        ({"n": 0}, "n"),
        ({"stream": "yes"}, "stream"),
        ({"stream_options": {"other": True}}, "stream_options"),
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "messages"),
        ({"messages": [{"role": "wizard", "content": "x"}]}, "messages"),
        ({"vllm_xargs": ["watermark_key"]}, "vllm_xargs"),
        ({"vllm_xargs": {"watermarking": "no"}}, "vllm_xargs.watermarking"),
    ],
)
def test_a_malformed_value_is_a_400_naming_the_field(extra, name):
    with pytest.raises(FieldRefused) as refused:
        check(CHAT | extra, chat=True)
    assert refused.value.status == 400 and refused.value.field == name


def test_vllm_xargs_holds_only_the_key_and_the_opt_out():
    assert check(CHAT | {"vllm_xargs": {"watermarking": "false"}}, chat=True) == []
    with pytest.raises(FieldRefused) as refused:
        check(CHAT | {"vllm_xargs": {"provenance_record": "ab" * 16}}, chat=True)
    assert refused.value.status == 403 and refused.value.field == "vllm_xargs.provenance_record"


def test_every_field_of_vllms_request_models_is_decided():
    """Each field of vLLM's chat and completion request models is on the list, or refused on
    purpose (those below); a new vLLM field fails here until it is decided."""
    protocol = pytest.importorskip("vllm.entrypoints.openai.chat_completion.protocol")
    completion = pytest.importorskip("vllm.entrypoints.openai.completion.protocol")
    refused = {
        "reasoning_effort", "thinking_token_budget", "include_reasoning", "documents",
        "chat_template", "chat_template_kwargs", "media_io_kwargs", "mm_processor_kwargs",
        "priority", "request_id", "session_id", "routed_experts_prompt_start",
        "return_token_offsets", "return_prompt_text", "mm_payload", "return_mm_kwargs",
        "cache_salt", "kv_transfer_params", "ec_transfer_params", "repetition_detection",
        "stream_interval", "truncate_prompt_tokens", "truncation_side", "length_penalty",
        "suffix", "prompt_embeds",
    }  # fmt: skip
    for model in (protocol.ChatCompletionRequest, completion.CompletionRequest):
        undecided = set(model.model_fields) - set(FIELDS) - refused
        assert not undecided, (model.__name__, sorted(undecided))
    assert not refused & set(FIELDS)
    assert fields.XARGS == ("watermark_key", "watermarking")


def test_the_sampling_the_gate_judges_unset_is_vllms_neutral_default_and_the_cores():
    """One set of defaults: what the gate writes for an unset setting is what the core
    applies and what vLLM's request models fall back to without a model's defaults."""
    from dataclasses import fields as dataclass_fields

    from generator.core import SamplingSettings

    core = {f.name: f.default for f in dataclass_fields(SamplingSettings)}
    assert fields.SAMPLING_DEFAULTS == core
    protocol = pytest.importorskip("vllm.entrypoints.openai.chat_completion.protocol")
    completion = pytest.importorskip("vllm.entrypoints.openai.completion.protocol")
    for model in (protocol.ChatCompletionRequest, completion.CompletionRequest):
        assert (
            model.__private_attributes__["_DEFAULT_SAMPLING_PARAMS"].default
            == fields.SAMPLING_DEFAULTS
        )


@pytest.mark.parametrize(
    ("body", "count"),
    [
        ({"prompt": "x"}, 1),
        ({"prompt": [5, 6, 7]}, 1),  # one prompt of token ids
        ({"prompt": ["x"]}, 1),
        ({"prompt": ["x", "y", "z"]}, 3),
        ({"prompt": [[5], [6]]}, 2),
        ({"prompt": ["x", "y"], "n": 3}, 6),
        ({"messages": [{"role": "user", "content": "x"}], "n": 2}, 2),
        ({"prompt": "x", "best_of": 4, "n": 2}, 4),
        ({"prompt": "x", "n": "9"}, 1),  # what vLLM would refuse counts as one
        ({"prompt": "x", "n": True}, 1),
    ],
)
def test_completions_counts_one_per_prompt_per_n(body, count):
    assert fields.completions(body) == count
