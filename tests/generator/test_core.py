from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

from detector.core.config import KeyConfig
from detector.core.prf import derive_key
from generator.config import KeyStore
from generator.core import (
    RowState,
    SamplingSettings,
    WatermarkRequestError,
    force_tokens,
    process_logits,
    resolve_settings,
    watermark_step,
)
from tests.generator.reference import keyed_argmax

KEY = 0x0123456789ABCDEF
STORE = KeyStore.from_mapping({"team-a": {"key": KEY}, "team-b": {"key": 99}})


def _row(output=None, prompt=None, sampling=None, **settings) -> RowState:
    s = KeyConfig(key=settings.pop("key", KEY), **settings)
    return RowState(
        s,
        sampling or SamplingSettings(),
        prompt or [],
        output if output is not None else [],
    )


def _logits(batch: int, vocab: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(batch, vocab, generator=torch.Generator().manual_seed(seed)) * 3


def test_a_watermarked_row_takes_the_keyed_argmax_of_its_context():
    logits = _logits(3, 1001)
    outputs = [[], [5, 6], [1, 2, 3, 4, 5, 6]]
    rows = [_row(o) for o in outputs]
    chosen = watermark_step(logits, rows, penalties=True)
    for i, out in enumerate(outputs):
        context = ([-1] * 4 + out)[-4:]
        assert chosen[i] == keyed_argmax(logits[i], KEY, context)


def test_rows_left_alone_are_marked_minus_one():
    chosen = watermark_step(_logits(3, 50), [None, _row(), None], penalties=True)
    assert chosen[0] == -1 and chosen[2] == -1 and 0 <= chosen[1] < 50


def test_temperature_and_top_k_shape_the_draw_before_the_key():
    logits = _logits(1, 500)
    sampling = SamplingSettings(temperature=0.7, top_k=5)
    chosen = watermark_step(logits, [_row(sampling=sampling)], penalties=True)
    expected = logits[0] / 0.7
    expected[expected < expected.topk(5).values[-1]] = float("-inf")
    assert chosen[0] == keyed_argmax(expected, KEY, [-1] * 4)
    assert int(chosen[0]) in logits[0].topk(5).indices.tolist()


def test_top_p_keeps_the_smallest_set_above_p():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    rows = [_row(sampling=SamplingSettings(top_p=0.75))]
    out = process_logits(logits, rows, penalties=False)
    assert torch.isfinite(out[0]).tolist() == [True, True, False, False]


def test_min_p_drops_tokens_below_a_share_of_the_best():
    logits = torch.log(torch.tensor([[0.6, 0.3, 0.08, 0.02]]))
    out = process_logits(logits, [_row(sampling=SamplingSettings(min_p=0.1))], penalties=False)
    assert torch.isfinite(out[0]).tolist() == [True, True, True, False]


def test_penalties_apply_only_when_asked():
    logits = torch.tensor([[2.0, 2.0, -1.0]])
    row = _row(
        output=[0, 0],
        prompt=[2],
        sampling=SamplingSettings(
            repetition_penalty=2.0, frequency_penalty=0.5, presence_penalty=0.25
        ),
    )
    out = process_logits(logits, [row], penalties=True)
    assert out[0].tolist() == pytest.approx([2.0 / 2 - 1.0 - 0.25, 2.0, -2.0])
    assert process_logits(logits, [row], penalties=False)[0].tolist() == [2.0, 2.0, -1.0]


def test_nan_logits_count_as_minus_infinity():
    logits = torch.tensor([[float("nan"), 0.0, float("nan")]])
    assert watermark_step(logits, [_row()], penalties=False)[0] == 1


def test_force_tokens_leaves_only_the_chosen_token_finite():
    logits = _logits(3, 10)
    force_tokens(logits, torch.tensor([4, -1, 0]))
    assert torch.isfinite(logits[0]).nonzero().flatten().tolist() == [4]
    assert torch.isfinite(logits[1]).all()
    assert torch.isfinite(logits[2]).nonzero().flatten().tolist() == [0]


class TestResolveSettings:
    def test_a_request_picks_its_key_by_name(self):
        name, s = resolve_settings({"watermark_key": "team-b"}, SamplingSettings(), STORE)
        assert name == "team-b" and s is not None and s.key == 99

    def test_a_request_can_opt_out(self):
        assert resolve_settings({"watermarking": False}, SamplingSettings(), STORE) == (None, None)

    def test_the_default_key_applies_without_a_name(self):
        assert resolve_settings({}, SamplingSettings(), STORE, "team-a")[0] == "team-a"

    def test_a_request_without_any_key_is_refused(self):
        with pytest.raises(WatermarkRequestError, match="no watermark key"):
            resolve_settings(None, SamplingSettings(), STORE)

    @pytest.mark.parametrize("value", [None, "", 7])
    def test_an_explicit_non_name_never_falls_to_the_default_key(self, value):
        with pytest.raises(WatermarkRequestError, match="non-empty string"):
            resolve_settings({"watermark_key": value}, SamplingSettings(), STORE, "team-a")

    def test_an_unknown_key_name_is_refused(self):
        with pytest.raises(WatermarkRequestError, match="team-z"):
            resolve_settings({"watermark_key": "team-z"}, SamplingSettings(), STORE)

    def test_greedy_requests_are_served_unwatermarked_with_a_warning(self, caplog):
        with caplog.at_level(logging.WARNING):
            name, s = resolve_settings(
                {"watermark_key": "team-a"}, SamplingSettings(temperature=0), STORE
            )
        assert (name, s) == ("team-a", None)
        assert "greedy" in caplog.text and str(KEY) not in caplog.text


def _brute_repeated(
    history: list[int], output_len: int, w: int, max_history, include_prompt: bool
) -> bool:
    """Upstream's definition spelled out: compare the window before each history position."""
    prompt_len = len(history) - output_len
    if include_prompt and output_len < w:
        return True
    tokens = history if include_prompt else history[prompt_len:]
    current = tuple(([-1] * w + history[prompt_len:])[-w:])
    start = 0 if max_history is None else max(0, len(tokens) - max_history)
    padded = [-1] * w + tokens
    return any(tuple(padded[j : j + w]) == current for j in range(start, len(tokens)))


@pytest.mark.parametrize("scope", ["single_turn", "all"])
@pytest.mark.parametrize("max_history", [None, 3, 10])
def test_repeated_contexts_match_the_definition(scope, max_history):
    rng = np.random.default_rng(7)
    for _ in range(40):
        prompt = rng.integers(0, 3, rng.integers(0, 8)).tolist()
        output: list[int] = []
        row = _row(
            output,
            prompt,
            context_width=2,
            deduplicate_contexts=scope,
            deduplicate_contexts_max_history=max_history,
        )
        for _ in range(15):
            expected = _brute_repeated(prompt + output, len(output), 2, max_history, scope == "all")
            assert row.repeated() == expected
            output.append(int(rng.integers(0, 3)))


def test_de_duplication_can_be_switched_off():
    out = [1, 2, 1, 2, 1]
    assert _row(out, context_width=2).repeated()
    assert not _row(out, context_width=2, deduplicate_contexts="none").repeated()


def test_a_repeated_context_is_sampled_without_the_key():
    # Two-token vocab, context (1, 2) seen before: the draw must not be the keyed argmax every time.
    logits = torch.zeros(1, 2)
    out = [1, 2, 1, 2]
    keyed = keyed_argmax(logits[0], KEY, [-1, -1, 1, 2][-2:])
    draws = {
        int(
            watermark_step(
                logits,
                [_row(out, context_width=2)],
                penalties=False,
                generator=torch.Generator().manual_seed(s),
            )[0]
        )
        for s in range(20)
    }
    assert draws == {0, 1} and keyed in draws


def test_dual_key_routes_about_alpha_of_the_tokens_to_key_b():
    row = _row(algorithm="dual_key_gumbel", alpha=0.3)
    a, b = derive_key(KEY, b"key_a"), derive_key(KEY, b"key_b")
    draws = [row.draw_key() for _ in range(4000)]
    assert set(draws) == {a, b}
    assert abs(draws.count(b) / 4000 - 0.3) < 0.03
    assert {_row(algorithm="dual_key_gumbel", alpha=0.0).draw_key() for _ in range(50)} == {a}


def test_keys_above_two_to_the_63_round_trip_through_the_kernel():
    big = 2**64 - 12345
    logits = _logits(1, 300)
    chosen = watermark_step(logits, [_row(key=big)], penalties=False)
    assert chosen[0] == keyed_argmax(logits[0], big, [-1] * 4)


def _recorded(sampling: SamplingSettings, steps: int = 6, seed: int = 4) -> RowState:
    """A recording row driven for ``steps`` keyed draws over random logits."""
    row = RowState(KeyConfig(key=KEY), sampling, [], [], record=True)
    for step in range(steps):
        chosen = watermark_step(_logits(1, 300, seed + step), [row], penalties=True)
        row.output_ids.append(int(chosen[0]))
    return row


def test_the_draw_record_sums_the_expected_excess_at_the_sampling_distribution():
    from detector.core.stats import gamma_upper_log10
    from detector.reading.model import expected_score_of

    sampling = SamplingSettings(temperature=0.8, top_k=50)
    row = _recorded(sampling)
    record = row.record
    assert record is not None and record.keyed == record.with_choice == 6
    want = 0.0
    for step in range(6):
        probs = process_logits(_logits(1, 300, 4 + step), [row], penalties=True).double()
        want += float(expected_score_of(probs.softmax(-1))[0])
    assert record.excess == pytest.approx(want, rel=1e-9)
    assert record.watermarked
    assert record.expected_log10_p() == pytest.approx(gamma_upper_log10(6, 6 + want))


@pytest.mark.parametrize(
    "sampling",
    [
        SamplingSettings(top_k=1),
        SamplingSettings(top_p=1e-9),
        SamplingSettings(min_p=1.0),
        SamplingSettings(temperature=1e-4),
    ],
)
def test_a_draw_without_choice_is_recorded_as_carrying_nothing(sampling):
    record = _recorded(sampling).record
    assert record is not None and record.keyed == 6
    assert record.with_choice == 0 and not record.watermarked
    assert record.excess < 1e-6
    assert record.expected_log10_p() == pytest.approx(gamma_upper_log10_of_chance(6), abs=1e-6)


def gamma_upper_log10_of_chance(n: int) -> float:
    from detector.core.stats import gamma_upper_log10

    return gamma_upper_log10(n, n)  # the detector's p at the expected score of chance


def test_a_row_without_record_keeps_none():
    row = _row()
    watermark_step(_logits(1, 300), [row], penalties=True)
    assert row.record is None
