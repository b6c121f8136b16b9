"""Sampling floors: the settings below which the keyed draw has no real choice left.

The keyed Gumbel-max draw writes its evidence only where the sampling distribution leaves the
key a choice. ``top_k: 1``, a ``top_p`` or ``min_p`` that keeps one token, or a temperature
near 0 reduce every position to its most likely token: the reply is served, but carries
nothing a detector can find. Where watermarking is enforced (``--enforce``, or a client that
may not opt out), the gate (``generator.auth``) refuses such a request with a 403 that names
the setting and its floor; the same floors tell ``generator.provenance_asgi`` that a request
it tags was not watermarked.

The defaults are read off ``benchmarks/bench_enforcement.py`` (SmolLM2-135M, docs/security.md):
each floor is the measured setting nearest to the single-candidate end at which a 100-token
reply still reaches p <= 1e-4 in expectation (two decades past the detector's threshold).
Operators change them with ``--min-top-k`` and friends, or the ``PROVENANCE_MIN_*`` variables
(vLLM's ``--middleware`` passes no arguments).

Settings each at its floor compound: temperature 0.5 with top_p 0.5 left SmolLM2 replies an
expected log10 p of -0.7 per 100 tokens, where either alone gave -6.3 and -4.7. So a request is
also judged as a whole: ``retained_share`` estimates the expected evidence per token a
combination keeps, as the product of each setting's measured share of the unrestricted
reply's (``EXCESS_PER_TOKEN``, the same benchmark; the product was at or below the measured
combination in 11 of 12 combinations, within 30% in the other), and a combination that keeps
less than the weakest single floor keeps alone is refused like a setting below a floor.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from generator import config
from generator.config import MAX_MIN_P_ENV, MIN_TEMPERATURE_ENV, MIN_TOP_K_ENV, MIN_TOP_P_ENV

# generator.core.SAMPLING_EPS (pinned by a test; the gate does not import torch for it)
SAMPLING_EPS = 1e-5


# Mean expected excess score per keyed token (E[s] - 1) of SmolLM2-135M-Instruct chat replies
# with one setting changed from unrestricted sampling (temperature 1): bench_enforcement.py,
# 100 tokens, 4-6 prompts per setting. Between points: linear; top_k above 100 linear in log k.
UNRESTRICTED_EXCESS = 2.729
EXCESS_PER_TOKEN: dict[str, tuple[tuple[float, float], ...]] = {
    "temperature": (
        (0.0, 0.0), (0.1, 0.10), (0.2, 0.17), (0.3, 0.31), (0.5, 0.608), (0.7, 1.00),
        (0.8, 1.461), (0.9, 1.796), (1.0, UNRESTRICTED_EXCESS),
    ),
    "top_k": (
        (1, 0.0), (2, 0.35), (3, 0.53), (5, 0.79), (10, 1.04), (20, 1.36), (50, 1.616),
        (100, 1.794),
    ),
    "top_p": (
        (0.0, 0.0), (0.1, 0.01), (0.3, 0.14), (0.5, 0.479), (0.7, 1.046), (0.8, 1.328),
        (0.9, 1.53), (0.95, 1.88), (1.0, UNRESTRICTED_EXCESS),
    ),
    "min_p": (
        (0.0, UNRESTRICTED_EXCESS), (0.02, 1.447), (0.05, 0.979), (0.1, 0.78), (0.3, 0.39),
        (0.5, 0.27), (1.0, 0.0),
    ),
}  # fmt: skip
_VOCAB = 49152  # SmolLM2's: top_k at the vocabulary keeps everything


def _interpolate(points: tuple[tuple[float, float], ...], x: float) -> float:
    if x <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return points[-1][1]


def setting_share(name: str, value: float) -> float:
    """The measured share of an unrestricted reply's evidence per token that one setting
    keeps (1 for a setting that restricts nothing)."""
    if name == "top_k":
        if value < 1:
            return 1.0  # 0 and -1: off
        if value > 100:
            low, high = math.log(100), math.log(_VOCAB)
            share = 1.794 + (UNRESTRICTED_EXCESS - 1.794) * (math.log(value) - low) / (high - low)
            return min(share / UNRESTRICTED_EXCESS, 1.0)
    if name == "temperature" and value >= 1.0:
        return 1.0
    return min(_interpolate(EXCESS_PER_TOKEN[name], value) / UNRESTRICTED_EXCESS, 1.0)


def retained_share(body: Mapping[str, Any]) -> float:
    """The estimated share of an unrestricted reply's expected evidence per token that a
    request's sampling settings keep together: the product of each setting's share."""
    share = 1.0
    for name in EXCESS_PER_TOKEN:
        value = _number(body.get(name))
        if value is not None:
            share *= setting_share(name, value)
    return share


@dataclass(frozen=True)
class SamplingFloors:
    """``top_k`` of 1 up to ``min_top_k - 1`` (0 and -1 mean off), a temperature below
    ``min_temperature``, a ``top_p`` below ``min_top_p`` and a ``min_p`` above ``max_min_p``
    leave the keyed draw too little choice."""

    min_top_k: int = 3
    min_temperature: float = 0.5
    min_top_p: float = 0.5
    max_min_p: float = 0.1

    def __post_init__(self) -> None:
        if self.min_top_k < 1:
            raise ValueError("min_top_k must be >= 1")
        if not 0.0 <= self.min_temperature:
            raise ValueError("min_temperature must be >= 0")
        if not 0.0 <= self.min_top_p <= 1.0 or not 0.0 <= self.max_min_p <= 1.0:
            raise ValueError("min_top_p and max_min_p must lie in [0, 1]")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SamplingFloors:
        env = config.floor_values() if environ is None else environ
        given: dict[str, Any] = {}
        for name, field, kind in (
            (MIN_TOP_K_ENV, "min_top_k", int),
            (MIN_TEMPERATURE_ENV, "min_temperature", float),
            (MIN_TOP_P_ENV, "min_top_p", float),
            (MAX_MIN_P_ENV, "max_min_p", float),
        ):
            if env.get(name):
                try:
                    given[field] = kind(env[name])
                except ValueError:
                    raise ValueError(f"${name} must be a number") from None
        return cls(**given)

    def to_env(self) -> dict[str, str]:
        """The variables that give these floors to a process that reads ``from_env``."""
        return {
            MIN_TOP_K_ENV: str(self.min_top_k),
            MIN_TEMPERATURE_ENV: repr(self.min_temperature),
            MIN_TOP_P_ENV: repr(self.min_top_p),
            MAX_MIN_P_ENV: repr(self.max_min_p),
        }

    def refusal(self, body: Mapping[str, Any]) -> str | None:
        """Why an OpenAI-style request body leaves the keyed draw no real choice, or None.

        Values are read as the engines parse them (a numeric string or a boolean counts as its
        number); a value neither can read is left to the engine, which refuses it."""
        temperature = _number(body.get("temperature"))
        if temperature is not None and temperature < SAMPLING_EPS:
            return "greedy decoding (temperature 0)"
        if temperature is not None and temperature < self.min_temperature:
            return f"temperature {temperature:g} (the floor is {self.min_temperature:g})"
        top_k = _number(body.get("top_k"))
        if top_k is not None and 1 <= top_k < self.min_top_k:
            return f"top_k {top_k:g} (the floor is {self.min_top_k})"
        top_p = _number(body.get("top_p"))
        if top_p is not None and top_p < self.min_top_p:
            return f"top_p {top_p:g} (the floor is {self.min_top_p:g})"
        min_p = _number(body.get("min_p"))
        if min_p is not None and min_p > self.max_min_p:
            return f"min_p {min_p:g} (the ceiling is {self.max_min_p:g})"
        if body.get("use_beam_search") not in (None, False):
            return "beam search"
        return self.combined_refusal(body)

    def weakest_share(self) -> float:
        """The least evidence share a single setting at its floor keeps."""
        return min(
            setting_share("temperature", self.min_temperature),
            setting_share("top_k", self.min_top_k),
            setting_share("top_p", self.min_top_p),
            setting_share("min_p", self.max_min_p),
        )

    def combined_refusal(self, body: Mapping[str, Any]) -> str | None:
        """Why settings each within its floor leave too little evidence together, or None."""
        values = {n: _number(body.get(n)) for n in EXCESS_PER_TOKEN}
        restricting = {
            n: v for n, v in values.items() if v is not None and setting_share(n, v) < 1.0
        }
        if len(restricting) < 2:
            return None
        share, floor = retained_share(body), self.weakest_share()
        if share >= floor:
            return None
        named = ", ".join(f"{n} {v:g}" for n, v in restricting.items())
        return (
            f"{named} together (an estimated {share:.1%} of unrestricted sampling's evidence "
            f"per token, below the {floor:.0%} each floor keeps alone)"
        )


def _number(value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number else None  # NaN: the engine's to refuse
