"""The edit-robust statistic with a model's per-token weights, and its per-text simulated null.

``benchmarks.research.robust`` scores a token of the hidden edit model's carrying state by the
Gumbel-max
likelihood ratio averaged over a fixed grid of token probabilities: it cannot tell a token that
was nearly the only choice (no signal) from one drawn among many. With a model's expected score
``E[s_t]`` per token (``detector.reading.model``), each token gets its own ratio, at the effective
probability ``p_t`` whose expected score is the model's:

    E[s | p] = psi(1 + 1/p) + gamma_E      (a draw among 1/p equally likely tokens)
    f1/f0(s) = (1/p_t) u^(1/p_t - 1),  u = 1 - exp(-s)

so a near-deterministic position (``E[s] -> 1``, ``p_t -> 1``) has ratio 1 and weighs nothing,
and the forward algorithm of the edit model (the same states, edit rates and context width as
``benchmarks.research.robust``) runs on these ratios. The statistic is ``R = log mean_e LR_n(e)``.

Validity: the ``E[s_t]`` depend on the text only, never on the key, and after de-duplication the
scores are i.i.d. Exp(1) under the null whatever the text (docs/spec.md §3); ``E0[f1/f0] = 1`` at
every position, so each ``LR_n(e)`` is a mean-1 martingale and ``exp(-R)`` bounds the p-value.
The exact null of ``R`` depends on the text's ``p_t``, so it is simulated for each text: ``sims``
sequences of i.i.d. Exp(1) scores through the same ratios, drawn independently of the key, give
the sequential Monte Carlo p-value of Besag and Clifford (1991): draws stop at the
``STOP_AFTER``-th draw ``L`` with ``R_sim >= R`` (p-value ``STOP_AFTER / L``), else after ``sims``
draws with ``k`` exceedances (p-value ``(1 + k) / (1 + sims)``). It is exact, and human text,
whose p-value is large, stops after a few dozen draws. Where it sits at its floor
``1 / (1 + sims)`` the reported p-value is
the smaller of the floor and the Markov bound: for ``a`` below the floor,
``P[reported <= a] <= P[exp(-R) <= a] <= a``, and above it the Monte Carlo p-value decides, so the
reported p-value stays valid.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from benchmarks.research.robust import EDIT_RATES, WIDTH, _njit

EULER_GAMMA = 0.5772156649015329
SIMS = 2000  # Monte Carlo draws per text at most: p-values resolved down to 5e-4
STOP_AFTER = 10  # sequential Monte Carlo: stop at this many exceedances (Besag-Clifford)
CHUNK = 100  # null draws run per batch
SEED = 20261201
_MAX_CHOICES = 1e6  # 1/p beyond a vocabulary's size carries no further meaning
_LN10 = math.log(10.0)


@functools.lru_cache(maxsize=1)
def _expected_grid() -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(E[s | 1/k], log k)`` on a grid of choice counts ``k`` in ``[1, 1e6]`` (E increasing)."""
    log_k = np.linspace(0.0, math.log(_MAX_CHOICES), 4001)
    return special.digamma(1.0 + np.exp(log_k)) + EULER_GAMMA, log_k


def effective_choices(expected_scores: ArrayLike) -> NDArray[np.float64]:
    """``1 / p_t``: the number of equally likely tokens whose Gumbel-max draw has expected
    score ``E[s_t]`` (1 where ``E[s_t] <= 1``; capped at 1e6)."""
    e = np.asarray(expected_scores, np.float64)
    if e.size and not np.all(np.isfinite(e)):
        raise ValueError("expected scores must be finite")
    grid_e, log_k = _expected_grid()
    return np.exp(np.interp(e, grid_e, log_k))


def log_ratios(scores: NDArray[np.float64], choices: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log f1/f0`` of every score (any leading shape) at ``1/p = choices`` (last axis),
    floored at -700 so that no ratio underflows to 0 (which would end the no-edit hypothesis
    for good; the floor raises ``E0[f1/f0]`` by under 1e-300)."""
    s = np.maximum(np.asarray(scores, np.float64), 1e-300)
    log_u = np.log(-np.expm1(-s))  # log(1 - e^-s), <= 0
    return np.maximum(np.log(choices) + (choices - 1.0) * log_u, -700.0)


@_njit
def _forward(log_h: NDArray[np.float64], rates: NDArray[np.float64], width: int) -> float:
    """``log mean_e LR_n(e)`` of one sequence of log ratios (the edit model of ``robust``)."""
    n, m, k = log_h.shape[0], rates.shape[0], width + 2
    alpha = np.zeros((m, k))
    alpha[:, k - 1] = 1.0  # the text starts intact
    log_lr = np.zeros(m)
    new = np.zeros(k)
    for t in range(n):
        # The carrying state's ratio, scaled by its largest value so that it never overflows.
        lh = log_h[t]
        shift = max(lh, 0.0)
        h = math.exp(lh - shift)
        floor = math.exp(-shift)  # the ratio 1 of the other states, on the same scale
        for j in range(m):
            e = rates[j]
            total = 0.0
            for i in range(k):
                total += alpha[j, i]
            new[0] = e * total * floor
            for i in range(1, k - 1):
                new[i] = (1.0 - e) * alpha[j, i - 1] * floor
            new[k - 1] = (1.0 - e) * (alpha[j, k - 2] + alpha[j, k - 1]) * h
            z = 0.0
            for i in range(k):
                z += new[i]
            for i in range(k):
                alpha[j, i] = new[i] / z
            log_lr[j] += math.log(z) + shift
    top = log_lr[0]
    for j in range(1, m):
        top = max(top, log_lr[j])
    acc = 0.0
    for j in range(m):
        acc += math.exp(log_lr[j] - top)
    return top + math.log(acc / m)


@_njit
def _forward_rows(log_h: NDArray[np.float64], rates: NDArray[np.float64], width: int) -> NDArray:
    out = np.empty(log_h.shape[0])
    for r in range(log_h.shape[0]):
        out[r] = _forward(log_h[r], rates, width)
    return out


@functools.lru_cache(maxsize=8)
def _null_scores(n: int, sims: int, seed: int) -> NDArray[np.float64]:
    """``[sims, n]`` i.i.d. Exp(1) draws, the same for every text of ``n`` scored tokens."""
    return np.random.default_rng([seed, n]).standard_exponential((sims, n))


@dataclass(frozen=True)
class WeightedRobustTest:
    """The model-weighted edit-robust test of one text under one key."""

    statistic: float  # R, the log likelihood ratio of the edit model with per-token ratios
    p_value: float
    log10_p: float
    num_scored_tokens: int
    sims: int  # null draws used (fewer than asked when the sequential test stopped early)


def weighted_robust_test(
    scores: ArrayLike, expected_scores: ArrayLike, *, sims: int = SIMS, seed: int = SEED
) -> WeightedRobustTest:
    """The test of the scored tokens' Exp(1)-under-the-null ``scores`` (``localize.exp_scores``)
    given the model's ``E[s]`` of the same tokens, in the same order."""
    s = np.asarray(scores, np.float64)
    e = np.asarray(expected_scores, np.float64)
    if s.shape != e.shape or s.ndim != 1:
        raise ValueError(f"{s.shape} scores for {e.shape} expected scores")
    if sims < 1:
        raise ValueError("sims must be positive")
    n = s.shape[0]
    if not n:
        return WeightedRobustTest(0.0, 1.0, 0.0, 0, sims)
    choices = effective_choices(e)
    rates = np.asarray(EDIT_RATES, np.float64)
    r = float(_forward(log_ratios(s, choices), rates, WIDTH))
    draws = _null_scores(n, sims, seed)
    exceed = 0
    for lo in range(0, sims, CHUNK):
        null = _forward_rows(log_ratios(draws[lo : lo + CHUNK], choices), rates, WIDTH)
        hits = np.flatnonzero(null >= r)
        if exceed + hits.size >= STOP_AFTER:
            stop = lo + int(hits[STOP_AFTER - exceed - 1]) + 1  # the draw of the last exceedance
            log10_p = math.log10(STOP_AFTER / stop)
            return WeightedRobustTest(r, 10.0**log10_p, log10_p, n, stop)
        exceed += hits.size
    log10_p = math.log10((1 + exceed) / (1 + sims))
    if exceed == 0:
        log10_p = min(log10_p, -r / _LN10)  # the Markov bound, only beyond the floor
    log10_p = min(0.0, log10_p)
    return WeightedRobustTest(r, 10.0**log10_p, log10_p, n, sims)
