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
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# generator.core.SAMPLING_EPS (pinned by a test; the gate does not import torch for it)
SAMPLING_EPS = 1e-5
MIN_TOP_K_ENV = "PROVENANCE_MIN_TOP_K"
MIN_TEMPERATURE_ENV = "PROVENANCE_MIN_TEMPERATURE"
MIN_TOP_P_ENV = "PROVENANCE_MIN_TOP_P"
MAX_MIN_P_ENV = "PROVENANCE_MAX_MIN_P"


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
        env = os.environ if environ is None else environ
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
        return None


def _number(value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number else None  # NaN: the engine's to refuse
