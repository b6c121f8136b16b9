"""An edit-robust statistic: the likelihood ratio of a hidden edit process, with a simulated null.

Context hashing re-synchronizes ``w`` tokens after an edit: a scored token carries the watermark
only when it and its ``w`` context tokens are all unedited, so at edit rate ``e`` about
``(1-e)^(w+1)`` of the scored tokens carry signal, in runs between edits, and the others read as
human text. This module tests "watermarked, then edited at an unknown rate" against "no
watermark" with the likelihood ratio of that model:

- A hidden state per scored token, ``c_t`` = unedited tokens in a row ending at ``t`` (capped at
  ``WIDTH + 1``): each token is edited with probability ``e`` (``c_t = 0``), else ``c_t`` grows.
  The text starts intact. A token with ``c_t = WIDTH + 1`` has score density ``f1``, any other
  the null's ``Exp(1)``.
- ``f1/f0`` is the Gumbel-max score's likelihood ratio averaged over a grid of probabilities
  ``p`` of the sampled token: a token drawn with probability ``p`` has ``u = r^p`` with ``r``
  uniform, so ``f1/f0 = (1/p) u^(1/p - 1)`` with ``u = 1 - exp(-s)``; the average over the grid
  ``P_GRID`` covers low- and high-entropy tokens without a model.
- The forward algorithm gives ``LR_n(e)``; the statistic is ``R = log mean_e LR_n(e)`` over the
  grid ``EDIT_RATES`` (``e = 0`` keeps the power of the test on unedited text).

Validity: after de-duplication the scores are i.i.d. ``Exp(1)`` under the null whatever the text
(docs/spec.md §3), and ``E0[f1/f0] = 1``, so each ``LR_n(e)`` and their mean are martingales with
mean 1: Markov's inequality bounds ``P[R >= r] <= exp(-r)`` for every ``n`` (always valid, but
loose: ``R`` drifts below 0 under the null, and at n = 200 its 1% quantile is 0.28, where the
bound reads 0.76). The exact null of ``R`` depends only on ``n``, the number of
scored tokens: ``robust_table.npz`` (beside this file) holds its simulated upper quantiles for
every ``n`` up to ``EXACT_N`` (one forward pass over a simulated sequence gives ``R`` at every
prefix); ``python -m benchmarks.research.robust`` regenerates it. Longer documents use the bound,
so the
statistic has little power beyond ``EXACT_N`` scored tokens unless the signal is strong.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numba
import numpy as np
from numpy.typing import ArrayLike, NDArray

from detector.core.config import KeyConfig, as_key_config
from detector.evidence.detection import Detection, detect_config

WIDTH = 4  # context width of the edit model (the deployed default; the null does not use it)
EDIT_RATES = (0.0, 0.1, 0.2, 0.3)
P_GRID = (0.05, 0.2, 0.5)
TABLE_PATH = Path(__file__).with_name("robust_table.npz")
_LN10 = math.log(10.0)


def _njit(fn: Callable[..., Any]) -> Any:
    """``numba.njit`` cached on disk where a cache location is writable (as
    ``kernels.utils.njit_cached``, without importing torch), else compiled at each start."""
    try:
        return numba.njit(cache=True, nogil=True)(fn)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return numba.njit(cache=False, nogil=True)(fn)


@_njit
def _ratio(s: float, inv_p: NDArray[np.float64]) -> float:
    """``f1/f0`` at score ``s``: mean over the grid of ``(1/p) u^(1/p - 1)``."""
    log_u = math.log(-math.expm1(-s)) if s > 0.0 else -745.0
    total = 0.0
    for k in range(inv_p.shape[0]):
        total += inv_p[k] * math.exp((inv_p[k] - 1.0) * log_u)
    return total / inv_p.shape[0]


@_njit
def _running_statistic(
    scores: NDArray[np.float64],
    rates: NDArray[np.float64],
    inv_p: NDArray[np.float64],
    width: int,
    prefix_max: bool = True,
) -> NDArray[np.float64]:
    """``max_{t' <= t} log mean_e LR_t'(e)`` for every prefix ``t`` (``[n]``)."""
    n, m, k = scores.shape[0], rates.shape[0], width + 2
    alpha = np.zeros((m, k))
    alpha[:, k - 1] = 1.0  # the text starts intact
    log_lr = np.zeros(m)
    new = np.zeros(k)
    out = np.empty(n)
    best = -np.inf
    for t in range(n):
        h = _ratio(scores[t], inv_p)
        for j in range(m):
            e = rates[j]
            total = 0.0
            for i in range(k):
                total += alpha[j, i]  # 1 after the first step (normalized)
            new[0] = e * total
            for i in range(1, k - 1):
                new[i] = (1.0 - e) * alpha[j, i - 1]
            new[k - 1] = (1.0 - e) * (alpha[j, k - 2] + alpha[j, k - 1]) * h
            z = 0.0
            for i in range(k):
                z += new[i]
            for i in range(k):
                alpha[j, i] = new[i] / z
            log_lr[j] += math.log(z)
        top = log_lr[0]
        for j in range(1, m):
            top = max(top, log_lr[j])
        acc = 0.0
        for j in range(m):
            acc += math.exp(log_lr[j] - top)
        mixed = top + math.log(acc / m)
        best = max(best, mixed) if prefix_max else mixed
        out[t] = best
    return out


def _params() -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    return np.asarray(EDIT_RATES, np.float64), 1.0 / np.asarray(P_GRID, np.float64)


def robust_statistic(scores: NDArray[np.float64]) -> float:
    """``R`` of a sequence of scored tokens' scores (Exp(1) under the null); 0.0 when empty."""
    s = np.ascontiguousarray(scores, np.float64)
    if not s.shape[0]:
        return 0.0
    rates, inv_p = _params()
    return float(_running_statistic(s, rates, inv_p, WIDTH, False)[-1])


# --- the null table ---------------------------------------------------------------------------


EXACT_N = 2048  # scored tokens tabulated one by one; beyond, the Markov bound
ALPHAS = 10.0 ** (-np.arange(4, 52) / 12.0)  # 0.46 .. 5.6e-5 (tabulated where resolved)
MIN_EVENTS = 50  # a tail probability is tabulated only where >= 50 draws exceed its quantile


@functools.lru_cache(maxsize=1)
def _table() -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(tail probabilities, upper quantiles ``[EXACT_N + 1, len(alpha)]``, row ``n``)."""
    with np.load(TABLE_PATH) as data:
        return data["alpha"].astype(np.float64), data["quantiles"].astype(np.float64)


def robust_log10_p(statistic: float, n: int) -> float:
    """log10 of the p-value of an observed ``R`` over ``n`` scored tokens.

    Inside the simulated range: log-linear interpolation between tabulated tail probabilities
    (the tail of ``R`` is close to exponential). Beyond it, or for ``n > EXACT_N``: the Markov
    bound ``exp(-R)``, capped at the smallest tabulated probability. Each branch is a valid
    p-value and they meet monotonically."""
    if n <= 0:
        return 0.0
    bound = min(0.0, -statistic / _LN10)  # R drifts below 0 under the null: then 0
    alphas, q = _table()
    if n >= q.shape[0]:
        return bound
    ok = ~np.isnan(q[n])
    quant, la = q[n][ok], np.log10(alphas[ok])  # quantiles rise as alpha falls
    if statistic <= quant[0]:
        return 0.0
    if statistic > quant[-1]:
        return min(float(la[-1]), bound)
    return float(np.interp(statistic, quant, la))


def robust_scores_log10_p(scores: NDArray[np.float64]) -> tuple[float, float]:
    """``(R, log10 p)`` of a sequence of Exp(1)-under-the-null scores."""
    r = robust_statistic(scores)
    return r, robust_log10_p(r, int(np.asarray(scores).shape[0]))


@dataclass(frozen=True)
class RobustTest:
    """The edit-robust test of one text under one key."""

    statistic: float  # R, the log likelihood ratio of the edit model
    p_value: float
    log10_p: float
    num_scored_tokens: int
    is_watermarked: bool


def robust_detection(
    detection: Detection, config: KeyConfig, threshold: float = 0.01
) -> RobustTest:
    """The edit-robust test from an existing ``Detection`` (its de-duplicated scores, mapped
    to Exp(1) for ``dual_key_gumbel`` as localization does)."""
    from detector.decision.rule import flags
    from detector.evidence.localize import exp_scores

    scores = exp_scores(detection, config)
    r, lp = robust_scores_log10_p(scores)
    flagged = flags(lp, threshold, int(scores.size))
    return RobustTest(r, 10.0**lp, lp, int(scores.shape[0]), flagged)


def robust_ids(
    token_ids: ArrayLike, key: int | KeyConfig, *, threshold: float = 0.01
) -> RobustTest:
    """The edit-robust test of ``token_ids`` under ``key`` (an int or a ``KeyConfig``)."""
    config = as_key_config(key)
    return robust_detection(detect_config(token_ids, config, threshold), config, threshold)


# --- calibration --------------------------------------------------------------------------------


def simulate(n: int, sims: int, seed: int) -> NDArray[np.float64]:
    """``R`` under the null at every prefix ``1..n`` of ``sims`` draws (``[sims, n]``)."""
    rng = np.random.default_rng(seed)
    rates, inv_p = _params()
    out = np.empty((sims, n))
    for i in range(sims):
        out[i] = _running_statistic(rng.standard_exponential(n), rates, inv_p, WIDTH, False)
    return out


def calibrate(sims: int, seed: int, largest: int) -> tuple[NDArray, NDArray]:
    """Upper quantiles of ``R`` for every ``n <= largest`` (row 0 unused), NaN where fewer
    than ``MIN_EVENTS`` draws exceed them."""
    t0 = time.perf_counter()
    draws = simulate(largest, sims, seed)
    print(f"{sims} draws of {largest} tokens: {time.perf_counter() - t0:.0f}s", flush=True)
    quantiles = np.full((largest + 1, ALPHAS.shape[0]), np.nan)
    ok = ALPHAS * sims >= MIN_EVENTS
    quantiles[1:, ok] = np.quantile(draws, 1.0 - ALPHAS[ok], axis=0, method="higher").T
    quantiles[0, ok] = 0.0
    return ALPHAS, quantiles


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate the edit-robust statistic's table.")
    parser.add_argument("--sims", type=int, default=40000)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--largest", type=int, default=EXACT_N)
    parser.add_argument("--out", default=str(TABLE_PATH))
    args = parser.parse_args(argv)
    alphas, quantiles = calibrate(args.sims, args.seed, args.largest)
    meta = {
        "statistic": "log mean_e LR_n of the hidden edit model",
        "width": WIDTH,
        "edit_rates": list(EDIT_RATES),
        "p_grid": list(P_GRID),
        "sims": args.sims,
        "seed": args.seed,
    }
    np.savez_compressed(
        args.out,
        alpha=alphas,
        quantiles=quantiles.astype(np.float32),
        meta=np.asarray(json.dumps(meta)),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
