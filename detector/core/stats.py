"""P-values for the Gumbel-max score and corrections for testing several hypotheses.

Everything is reported as a pair ``(p_value, log10_p)``: texts of a few thousand watermarked
tokens reach p-values far below 1e-300, where a float64 p-value is 0 but its log is exact.
scipy gives the upper regularized incomplete gamma; where it underflows, mpmath evaluates the
same function at arbitrary precision (about 0.2 ms).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import mpmath
import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

_UNDERFLOW = 1e-280  # below this, take the log from mpmath rather than from a float64


def gamma_upper_log10(shape: float, x: float) -> float:
    """log10 of Q(shape, x) = P[Gamma(shape, 1) >= x]; 0.0 when shape <= 0 or x <= 0."""
    if shape <= 0 or x <= 0:
        return 0.0
    q = float(special.gammaincc(shape, x))
    if q > _UNDERFLOW:
        return math.log10(q)
    if x > shape + 1.0:
        return _upper_log10_continued_fraction(shape, x)
    return float(mpmath.log10(mpmath.gammainc(shape, x, mpmath.inf, regularized=True)))


def _upper_log10_continued_fraction(shape: float, x: float) -> float:
    """log10 Q(shape, x) for x > shape + 1 from the continued fraction of Gamma(shape, x)
    (modified Lentz; Numerical Recipes' ``gcf``), in logs: Q = exp(-x) x^shape h / Gamma(shape).
    mpmath's hypergeometric series stop converging for long texts (shape 16,536, x 31,341 on
    a 45k-token text); the fraction converges there in a few hundred steps, and float64 holds
    h (about 1 / (x - shape)) exactly enough: the log's absolute error stays near 1e-10."""
    tiny = 1e-300
    b = x + 1.0 - shape
    c, d = 1.0 / tiny, 1.0 / b
    h = d
    for i in range(1, 100_000):
        an = -i * (i - shape)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        step = d * c
        h *= step
        if abs(step - 1.0) < 1e-15:
            break
    return (-x + shape * math.log(x) - math.lgamma(shape) + math.log(h)) / math.log(10.0)


def _pair(log10_p: float) -> tuple[float, float]:
    log10_p = min(0.0, log10_p)
    return 10.0**log10_p, log10_p


def gamma_sf(score: float, n: int) -> tuple[float, float]:
    """One-sided p-value of a sum of ``n`` Exp(1) scores: ``(P[Gamma(n,1) >= score], log10)``."""
    if n < 0:
        raise ValueError("the number of scored tokens cannot be negative")
    return _pair(gamma_upper_log10(float(n), float(score)))


def dual_key_sf(score: float, n: int, alpha: float) -> tuple[float, float]:
    """P-value of the dual-key score ``sum((1-a) s_A + a s_B)`` by moment matching: Q(n/v, S/v)."""
    v = dual_key_scale(alpha)
    return _pair(gamma_upper_log10(n / v, score / v))


def dual_key_scale(alpha: float) -> float:
    """``v = (1-a)^2 + a^2``: the dual-key sum of ``n`` scores is matched to ``v Gamma(n/v)``."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError("alpha must lie in [0, 1]")
    return (1.0 - alpha) ** 2 + alpha**2


def gamma_upper_log10_many(shape: ArrayLike, x: ArrayLike) -> NDArray[np.float64]:
    """``gamma_upper_log10`` of each pair, clamped at 0: one vectorized call where the float
    holds the tail, the scalar's exact branches where it underflows."""
    a = np.asarray(shape, np.float64)
    z = np.asarray(x, np.float64)
    with np.errstate(divide="ignore"):
        q = special.gammaincc(np.maximum(a, 1e-300), np.maximum(z, 0.0))
        out = np.minimum(np.log10(q), 0.0)
    out[(a <= 0) | (z <= 0)] = 0.0
    for i in np.flatnonzero((q <= _UNDERFLOW) & (a > 0) & (z > 0)):
        out[i] = min(0.0, gamma_upper_log10(float(a[i]), float(z[i])))
    return out


def bonferroni(log10_ps: ArrayLike, m: int | None = None) -> NDArray[np.float64]:
    """Bonferroni-adjusted log10 p-values for ``m`` hypotheses (default: as many as given)."""
    lp = np.asarray(log10_ps, dtype=np.float64)
    m = lp.size if m is None else m
    if m < lp.size:
        raise ValueError("m cannot be smaller than the number of p-values")
    if m == 0:
        return lp.copy()
    return np.minimum(0.0, lp + math.log10(m))


def holm(log10_ps: ArrayLike) -> NDArray[np.float64]:
    """Holm step-down adjusted log10 p-values (uniformly more powerful than Bonferroni)."""
    lp = np.asarray(log10_ps, dtype=np.float64)
    m = lp.size
    if m == 0:
        return lp.copy()
    order = np.argsort(lp, kind="stable")
    factors = np.log10(np.arange(m, 0, -1, dtype=np.float64))  # m, m-1, ..., 1
    stepped = np.maximum.accumulate(np.minimum(0.0, lp[order] + factors))
    adjusted = np.empty(m, np.float64)
    adjusted[order] = stepped
    return adjusted


CORRECTIONS: dict[str, Callable[[ArrayLike], NDArray[np.float64]]] = {
    "holm": holm,
    "bonferroni": bonferroni,
}
