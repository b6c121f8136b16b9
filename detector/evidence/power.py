"""Power of the Gamma-sum test: could a watermarked text of this length and kind be detected?

A token sampled by the keyed Gumbel-max rule with probability ``p`` scores
``s = -log(1 - R^p)`` with ``R`` uniform (docs/spec.md §2), i.e. ``s = -log W`` with
``W ~ Beta(1, b)``, ``b = 1/p``. Its mean is ``f(p) = psi(1 + 1/p) + gamma_E`` (1 for a forced
token, the null's mean) and its cumulant generating function is exact:

    K_b(t) = log E[e^{t s}] = lgamma(1 - t) + lgamma(1 + b) - lgamma(1 + b - t),  t < 1.

Given each scored token's expected score ``e_i`` (from a model's distribution at that position,
``sum_x p_x f(p_x)``), a token is modelled as the single-probability token of the same mean
(``b_i`` solves ``f(1/b_i) = e_i``); the sum's tail at the test's critical value comes from the
Lugannani-Rice saddlepoint formula on ``sum_i K_{b_i}``, which is exact in the limit of many
tokens and, for a Gamma(n, 1) sum (every ``b_i = 1``), within 1% relative of scipy's tail
from n = 10 on. A position's sampled token is really a mixture over the vocabulary, whose
variance is a little larger than the single-probability token of the same mean, so the model
slightly overstates power at a power of 0.8; ``tests/detector/evidence/test_power.py``
compares it with simulated keyed sampling over mixtures.

Without per-token expectations, the key's measured power curve (``tokens_needed``: scored
tokens for 80% power at the threshold, one hypothesis) gives the per-token mean ``e*`` that
explains it, and the power at another length or multiplicity follows from ``e*``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special

from detector.core.config import DEFAULT_THRESHOLD

EULER_GAMMA = float(np.euler_gamma)
TARGET_POWER = 0.8
# Scored tokens a watermarked text needs for 80% power at threshold 0.01 (one hypothesis)
# when nothing is known about the key or the text: code from SmolLM2-135M-Instruct at
# T = 0.7 / top-p 0.9 on vLLM, the low-entropy case. Fitted 151, bootstrap 95% upper bound
# 184 over 50 answers, rounded up (benchmarks/bench_verdict_default.py; docs/benchmarks.md).
DEFAULT_TOKENS_NEEDED = 200

VerdictName = Literal["watermarked", "not_watermarked", "inconclusive"]
WATERMARKED: VerdictName = "watermarked"
NOT_WATERMARKED: VerdictName = "not_watermarked"
INCONCLUSIVE: VerdictName = "inconclusive"
VERDICTS: tuple[VerdictName, ...] = (WATERMARKED, NOT_WATERMARKED, INCONCLUSIVE)


def expected_score(p: ArrayLike) -> NDArray[np.float64]:
    """``f(p) = psi(1 + 1/p) + gamma_E``: the mean score of a sampled token of probability p."""
    p = np.asarray(p, np.float64)
    if np.any((p <= 0) | (p > 1)):
        raise ValueError("probabilities must lie in (0, 1]")
    return special.digamma(1.0 + 1.0 / p) + EULER_GAMMA


def position_expected_score(probs: ArrayLike) -> NDArray[np.float64]:
    """``E[s] = sum_x p_x f(p_x)`` over the last axis of a (processed) distribution: the mean
    score of the token the keyed sampler draws at that position (zeros carry no weight)."""
    p = np.asarray(probs, np.float64)
    safe = np.where(p > 0, p, 1.0)
    return np.sum(np.where(p > 0, p * expected_score(safe), 0.0), axis=-1)


def inverse_probability(expected: ArrayLike) -> NDArray[np.float64]:
    """``b = 1/p`` of the single-probability token whose mean score is ``expected`` (>= 1;
    values below 1, the null's mean, are taken as 1)."""
    y = np.maximum(np.asarray(expected, np.float64), 1.0) - EULER_GAMMA  # psi(1 + b) = y
    b = np.maximum(np.exp(y) - 0.5, 1.0)  # psi(x) ~ log(x - 1/2)
    for _ in range(50):  # Newton on psi(1 + b) = y; psi is concave, so it converges from here
        step = (special.digamma(1.0 + b) - y) / _polygamma(1, 1.0 + b)
        b = np.maximum(b - step, 1.0)
        if np.all(np.abs(step) <= 1e-12 * b):
            break
    return b


def _polygamma(m: int, x: ArrayLike) -> NDArray[np.float64]:
    """psi^(m)(x) for m in 0..2, through ufuncs (``special.polygamma`` is a slow wrapper):
    psi^(m)(x) = (-1)^(m+1) m! zeta(m + 1, x) for m >= 1."""
    if m == 0:
        return special.digamma(x)
    return (-1.0) ** (m + 1) * math.factorial(m) * special.zeta(m + 1, x)


@dataclass(frozen=True)
class _Cgf:
    """Cumulant generating function of a sum of ``-log Beta(1, b_i)`` scores, ``counts[i]``
    tokens of each ``b_i`` (a text of one kind is a single ``b`` with its count: O(1))."""

    b: NDArray[np.float64]  # [k]
    counts: NDArray[np.float64]  # [k]

    @property
    def n(self) -> float:
        return float(self.counts.sum())

    def k(self, t: float) -> float:
        b, c = self.b, self.counts
        return float(
            self.n * special.gammaln(1.0 - t)
            + np.sum(c * (special.gammaln(1.0 + b) - special.gammaln(1.0 + b - t)))
        )

    def d(self, t: float, order: int) -> float:
        """The ``order``-th derivative (1, 2 or 3) of K at t."""
        m = order - 1
        sign = 1.0 if order % 2 else -1.0  # (-1)^(order-1)
        return sign * float(
            np.sum(self.counts * _polygamma(m, 1.0 + self.b - t)) - self.n * _polygamma(m, 1.0 - t)
        )


def _cgf(expected_scores: ArrayLike) -> _Cgf:
    e = np.asarray(expected_scores, np.float64).ravel()
    values, counts = np.unique(e, return_counts=True)
    return _Cgf(inverse_probability(values), counts.astype(np.float64))


def sum_tail(expected_scores: ArrayLike, critical: float) -> float:
    """``P[sum_i s_i >= critical]`` for independent sampled tokens of means ``expected_scores``,
    each a single-probability token (saddlepoint, Lugannani-Rice)."""
    return _saddlepoint_tail(_cgf(expected_scores), critical)


def _saddlepoint_tail(cgf: _Cgf, critical: float) -> float:
    if cgf.n == 0:
        return 0.0 if critical > 0 else 1.0
    if critical <= 0:
        return 1.0
    lo = -1.0
    while cgf.d(lo, 1) > critical:
        lo *= 2.0
    t = float(optimize.brentq(lambda x: cgf.d(x, 1) - critical, lo, 1.0 - 1e-12, xtol=1e-14))
    k2 = cgf.d(t, 2)
    r = math.copysign(math.sqrt(max(2.0 * (t * critical - cgf.k(t)), 0.0)), t)
    u = t * math.sqrt(k2)
    if abs(u) < 1e-5 or abs(r) < 1e-5:  # at the mean: the formula's limit
        return 0.5 - cgf.d(t, 3) / (6.0 * math.sqrt(2.0 * math.pi) * k2**1.5)
    return float(np.clip(special.ndtr(-r) + _phi(r) * (1.0 / u - 1.0 / r), 0.0, 1.0))


@dataclass(frozen=True)
class ScoreMoments:
    """Mean, variance and third cumulant of the score of the token sampled at each position."""

    mean: NDArray[np.float64]
    variance: NDArray[np.float64]
    third: NDArray[np.float64]


def score_moments(probs: ArrayLike) -> ScoreMoments:
    """Exact moments of a sampled token's score per position, from the (processed) next-token
    distributions ``probs`` (``[..., vocab]``): the mixture over which token is drawn."""
    p = np.asarray(probs, np.float64)
    w = np.where(p > 0, p, 0.0)
    b = 1.0 / np.where(p > 0, p, 1.0)
    f = special.digamma(1.0 + b) + EULER_GAMMA
    v = _polygamma(1, 1.0) - _polygamma(1, 1.0 + b)
    k3 = _polygamma(2, 1.0 + b) - _polygamma(2, 1.0)
    mean = np.sum(w * f, axis=-1)
    dev = f - mean[..., None]
    variance = np.sum(w * (v + dev**2), axis=-1)
    third = np.sum(w * (k3 + 3.0 * v * dev + dev**3), axis=-1)
    return ScoreMoments(mean, variance, third)


def _single_moments(expected: NDArray[np.float64]) -> tuple[NDArray, NDArray]:
    """Variance and third cumulant of the single-probability token of each mean."""
    b = inverse_probability(expected)
    v = _polygamma(1, 1.0) - _polygamma(1, 1.0 + b)
    return v, _polygamma(2, 1.0 + b) - _polygamma(2, 1.0)


def _phi(x: float) -> float:
    return math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def _edgeworth_tail(k1: float, k2: float, k3: float, critical: float) -> float:
    """``P[S >= critical]`` from the sum's first three cumulants (one Edgeworth term):
    accurate near the centre, where a power of 0.8 lies."""
    z = (critical - k1) / math.sqrt(k2)
    gamma = k3 / k2**1.5
    tail = special.ndtr(-z) + _phi(z) * gamma * (z * z - 1.0) / 6.0
    return float(np.clip(tail, 0.0, 1.0))


def critical_sum(n: int, log10_level: float) -> float:
    """The Gamma(n, 1) score sum a text of ``n`` scored tokens must reach for a p-value of
    ``10**log10_level``."""
    if n <= 0:
        return math.inf
    level = 10.0**log10_level
    if level > 1e-300:
        return float(special.gammainccinv(n, level))
    from detector.core.stats import gamma_upper_log10

    lo, hi = float(n), 2.0 * n + 10.0
    while gamma_upper_log10(n, hi) > log10_level:
        lo, hi = hi, 2.0 * hi
    return float(optimize.brentq(lambda x: gamma_upper_log10(n, x) - log10_level, lo, hi))


def power(
    expected_scores: ArrayLike,
    log10_level: float,
    *,
    variances: ArrayLike | None = None,
    third_cumulants: ArrayLike | None = None,
) -> float:
    """Power of the Gamma-sum test at p-value level ``10**log10_level`` for a watermarked text
    whose scored tokens have these expected scores (one per scored token).

    With only the means, each token is the single-probability token of that mean
    (saddlepoint); with ``variances`` (and ``third_cumulants``) from ``score_moments``, the
    sum's own cumulants decide (Edgeworth), which follows a position's mixture over the
    vocabulary: means alone overstate power by about 5 points at 0.8 on such mixtures."""
    e = np.asarray(expected_scores, np.float64).ravel()
    if e.size == 0:
        return 0.0
    critical = critical_sum(int(e.size), log10_level)
    if variances is None:
        return _saddlepoint_tail(_cgf(e), critical)
    v = np.asarray(variances, np.float64).ravel()
    if v.shape != e.shape:
        raise ValueError("one variance per expected score is needed")
    if third_cumulants is None:
        third = _single_moments(e)[1]
    else:
        third = np.asarray(third_cumulants, np.float64).ravel()
    return _edgeworth_tail(float(e.sum()), float(v.sum()), float(third.sum()), critical)


@functools.lru_cache(maxsize=256)
def _inverse_probability_of(mean_score: float) -> float:
    return float(inverse_probability([mean_score])[0])


@functools.lru_cache(maxsize=65536)  # audits: many texts share a scored-token count
def constant_power(n: int, mean_score: float, log10_level: float) -> float:
    """``power`` for ``n`` scored tokens that all have expected score ``mean_score``: the
    saddlepoint of ``n K_b`` in scalars (about 0.1 ms; verdicts of whole audits use it)."""
    if n <= 0:
        return 0.0
    b = _inverse_probability_of(mean_score)
    q = critical_sum(n, log10_level) / n  # per token
    digamma, zeta = special.digamma, special.zeta

    def slope(t: float) -> float:  # K'(t) / n
        return float(digamma(1.0 + b - t) - digamma(1.0 - t))

    lo = -1.0
    while slope(lo) > q:
        lo *= 2.0
    t = float(optimize.brentq(lambda x: slope(x) - q, lo, 1.0 - 1e-12, xtol=1e-14))
    k = n * float(
        special.gammaln(1.0 - t) + special.gammaln(1.0 + b) - special.gammaln(1.0 + b - t)
    )
    k2 = n * float(zeta(2, 1.0 - t) - zeta(2, 1.0 + b - t))
    r = math.copysign(math.sqrt(max(2.0 * (t * q * n - k), 0.0)), t)
    u = t * math.sqrt(k2)
    if abs(u) < 1e-5 or abs(r) < 1e-5:
        k3 = n * float(2.0 * zeta(3, 1.0 - t) - 2.0 * zeta(3, 1.0 + b - t))
        return 0.5 - k3 / (6.0 * math.sqrt(2.0 * math.pi) * k2**1.5)
    return float(min(max(special.ndtr(-r) + _phi(r) * (1.0 / u - 1.0 / r), 0.0), 1.0))


@functools.lru_cache(maxsize=4096)
def tokens_for_power(
    mean_score: float, log10_level: float, target: float = TARGET_POWER, limit: int = 1 << 20
) -> int | None:
    """Smallest number of scored tokens of expected score ``mean_score`` for power ``target``
    (``None`` when ``limit`` tokens do not suffice)."""
    target -= 1e-9  # a curve's own tokens_needed reaches exactly target, up to rounding
    if constant_power(limit, mean_score, log10_level) < target:
        return None
    lo, hi = 0, 1
    while constant_power(hi, mean_score, log10_level) < target:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if constant_power(mid, mean_score, log10_level) >= target else (mid, hi)
    return hi


@functools.lru_cache(maxsize=1024)
def mean_score_for(tokens_needed: int, log10_level: float = math.log10(DEFAULT_THRESHOLD)) -> float:
    """The per-token expected score ``e*`` with which ``tokens_needed`` scored tokens give 80%
    power at ``10**log10_level``: the kind of text a measured power curve describes."""
    if tokens_needed < 1:
        raise ValueError("tokens_needed must be a positive integer")

    def gap(e: float) -> float:
        return constant_power(tokens_needed, e, log10_level) - TARGET_POWER

    hi = 2.0
    while gap(hi) < 0:
        hi *= 2.0
    return float(optimize.brentq(gap, 1.0 + 1e-9, hi, xtol=1e-10))


def curve_power(
    num_scored: int,
    tokens_needed: int,
    log10_level: float,
    calibrated_log10_level: float = math.log10(DEFAULT_THRESHOLD),
) -> float:
    """Power at ``num_scored`` scored tokens and level ``10**log10_level`` for a key whose
    measured curve needs ``tokens_needed`` scored tokens for 80% power at
    ``10**calibrated_log10_level``."""
    e = mean_score_for(tokens_needed, calibrated_log10_level)
    return constant_power(num_scored, e, log10_level)


Basis = Literal["model", "key", "default"]

_BASIS_WORDS = {
    "model": "from the model's predictions for this text",
    "key": "from the key's measured power curve",
    "default": "from the default for low-entropy text; this key has no measured power curve",
}


@dataclass(frozen=True)
class PowerModel:
    """How strongly a watermarked text of this kind would score: per scored token expectations
    from a model (``model``), the key's measured power curve (``key``), or the shipped default
    (``default``). ``power_model`` builds one."""

    basis: Basis
    mean_score: float  # per scored token; for ``model``, the mean of ``expected_scores``
    expected_scores: NDArray[np.float64] | None = field(default=None, repr=False)
    variances: NDArray[np.float64] | None = field(default=None, repr=False)
    tokens_needed: int | None = None  # the measured (or default) figure at DEFAULT_THRESHOLD

    def power(self, num_scored: int, log10_level: float) -> float:
        """Power at ``num_scored`` scored tokens (the model basis knows its own count)."""
        if self.expected_scores is not None:
            return power(self.expected_scores, log10_level, variances=self.variances)
        return constant_power(num_scored, self.mean_score, log10_level)

    def needed(self, log10_level: float) -> int | None:
        """Scored tokens of this kind for 80% power (``None``: no length suffices)."""
        if self.tokens_needed is not None and log10_level == math.log10(DEFAULT_THRESHOLD):
            return self.tokens_needed
        return tokens_for_power(self.mean_score, log10_level)


def power_model(
    *,
    expected_scores: ArrayLike | None = None,
    variances: ArrayLike | None = None,
    tokens_needed: int | None = None,
) -> PowerModel:
    """The best available ``PowerModel``: ``expected_scores`` (one per scored token, from a
    model; ``variances`` optional) over the key's ``tokens_needed`` (scored tokens for 80% power
    at threshold 0.01, one hypothesis) over ``DEFAULT_TOKENS_NEEDED``."""
    if expected_scores is not None:
        e = np.asarray(expected_scores, np.float64).ravel()
        v = None if variances is None else np.asarray(variances, np.float64).ravel()
        return PowerModel("model", float(e.mean()) if e.size else 1.0, e, v)
    if tokens_needed is not None:
        n = int(tokens_needed)
        return PowerModel("key", mean_score_for(n), tokens_needed=n)
    return PowerModel(
        "default", mean_score_for(DEFAULT_TOKENS_NEEDED), tokens_needed=DEFAULT_TOKENS_NEEDED
    )


@dataclass(frozen=True)
class ThreeWay:
    """A three-way verdict, the reason in words, and the power behind it (None when the text
    was detected)."""

    verdict: VerdictName
    reason: str
    power: float | None = None
    tokens_needed: int | None = None  # scored tokens of this kind for 80% power at this level


def three_way(
    *,
    detected: bool,
    p_value: float,
    threshold: float,
    num_scored: int,
    model: PowerModel,
    log10_level: float,
    label: str = "",
    corrected: bool = True,
) -> ThreeWay:
    """``watermarked`` when ``detected``; ``not_watermarked`` only when a watermarked text of
    this length and kind would have been detected with power >= 0.8 at ``10**log10_level``
    (the level the test had to reach after corrections); ``inconclusive`` otherwise."""
    if detected:
        # No p-value in the words: basic-tier answers round p-values, the reason must not undo it.
        what = "corrected p-value" if corrected else "p-value"
        return ThreeWay(WATERMARKED, f"the {what} is at most the threshold {threshold:g}")
    needed = model.needed(log10_level)
    pw = model.power(num_scored, log10_level) if num_scored > 0 else 0.0
    basis = _BASIS_WORDS[model.basis]
    about = (
        f"about {needed} are needed for text of this kind"
        if needed is not None
        else "no length of text this predictable would suffice"
    )
    where = f" ({label})" if label else ""
    if pw >= TARGET_POWER - 1e-9:
        return ThreeWay(
            NOT_WATERMARKED,
            f"{num_scored} tokens were scored{where}: a watermarked text of this length and kind "
            f"would have been detected with probability {pw:.2f} ({basis})",
            pw,
            needed,
        )
    count = (
        "no token could be scored"
        if num_scored == 0
        else f"only {num_scored} tokens could be scored"
    )
    return ThreeWay(
        INCONCLUSIVE,
        f"{count}{where}; {about} (a watermarked text would have been detected with "
        f"probability {pw:.2f}, {basis})",
        pw,
        needed,
    )
