"""The sampling floors: which request bodies leave the keyed draw no real choice."""

from __future__ import annotations

import pytest

from generator.floors import SAMPLING_EPS, SamplingFloors, retained_share, setting_share

FLOORS = SamplingFloors(min_top_k=3, min_temperature=0.5, min_top_p=0.5, max_min_p=0.1)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"temperature": 0}, "greedy"),
        ({"temperature": "0.0"}, "greedy"),
        ({"temperature": SAMPLING_EPS / 2}, "greedy"),
        ({"temperature": 1e-4}, "temperature 0.0001"),
        ({"temperature": 0.49}, "temperature 0.49"),
        ({"top_k": 1}, "top_k 1"),
        ({"top_k": True}, "top_k 1"),
        ({"top_k": "2"}, "top_k 2"),
        ({"top_p": 1e-9}, "top_p 1e-09"),
        ({"min_p": 1.0}, "min_p 1"),
        ({"use_beam_search": True}, "beam search"),
    ],
)
def test_settings_below_a_floor_are_refused_with_the_setting_named(body, reason):
    got = FLOORS.refusal(body)
    assert got is not None and reason in got


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"temperature": 0.5, "top_k": 0, "top_p": 1.0, "min_p": 0.0},  # one restricts
        {"top_k": 0},  # off
        {"top_k": -1},  # off
        {"temperature": None, "top_p": None},
        {"temperature": "warm"},  # unreadable: the engine refuses it
        {"temperature": float("nan")},
        {"use_beam_search": False},
    ],
)
def test_settings_at_or_above_the_floors_pass(body):
    assert FLOORS.refusal(body) is None


def test_the_floors_travel_through_the_environment():
    floors = SamplingFloors(min_top_k=5, min_temperature=0.7, min_top_p=0.8, max_min_p=0.05)
    assert SamplingFloors.from_env(floors.to_env()) == floors
    assert SamplingFloors.from_env({}) == SamplingFloors()
    with pytest.raises(ValueError, match="PROVENANCE_MIN_TOP_K"):
        SamplingFloors.from_env({"PROVENANCE_MIN_TOP_K": "three"})


@pytest.mark.parametrize(
    "kwargs",
    [{"min_top_k": 0}, {"min_temperature": -1.0}, {"min_top_p": 1.5}, {"max_min_p": -0.1}],
)
def test_impossible_floors_are_refused(kwargs):
    with pytest.raises(ValueError):
        SamplingFloors(**kwargs)


@pytest.mark.parametrize(
    "body",
    [
        {"temperature": 0.5, "top_p": 0.5},  # measured: expected log10 p -0.7 per 100 tokens
        {"top_k": 3, "top_p": 0.5},
        {"temperature": 0.5, "top_k": 3, "top_p": 0.5, "min_p": 0.1},
        {"top_p": 0.5, "min_p": 0.1},
    ],
)
def test_settings_each_at_its_floor_are_refused_together(body):
    assert all(FLOORS.refusal({name: value}) is None for name, value in body.items())
    got = FLOORS.refusal(body)
    assert got is not None and "together" in got
    assert all(name in got for name in body)


@pytest.mark.parametrize(
    "body",
    [
        {"temperature": 0.7, "top_p": 0.9},  # measured -7.3 per 100 tokens
        {"temperature": 0.8, "top_k": 50},  # measured -17.9
        {"top_k": 40, "top_p": 0.95},
        {"temperature": 1.5, "top_p": 0.5},  # a hotter temperature restricts nothing
    ],
)
def test_combinations_that_keep_the_floors_evidence_pass(body):
    assert FLOORS.refusal(body) is None


def test_the_estimate_follows_the_measured_points():
    assert retained_share({}) == 1.0
    assert retained_share({"top_k": 0, "temperature": 1.0, "top_p": 1.0, "min_p": 0}) == 1.0
    assert setting_share("top_p", 0.5) == pytest.approx(0.479 / 2.729)
    assert setting_share("top_k", 1) == 0.0 and setting_share("top_k", 49152) == 1.0
    assert 1.794 / 2.729 < setting_share("top_k", 1000) < 1.0
    assert retained_share({"temperature": 0.5, "top_p": 0.5}) == pytest.approx(
        setting_share("temperature", 0.5) * setting_share("top_p", 0.5)
    )
    # the weakest single floor is the bar for a combination
    assert FLOORS.weakest_share() == pytest.approx(setting_share("top_p", 0.5))
