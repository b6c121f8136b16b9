"""Model-agnostic statistics of the scored tokens beside the Gamma sum, with their nulls.

Every statistic here is a function of the scored tokens' scores ``s`` alone (``exp_scores``:
i.i.d. Exp(1) under the null after de-duplication and the n-gram mask, whatever the text), or
equivalently of the per-token upper-tail p-values ``p = exp(-s) = 1 - r`` (i.i.d.
Uniform(0, 1) under the null; ``r`` is the keyed uniform of the token). A watermarked token of
probability ``q`` has ``r = R^q``, so its ``p`` is pushed towards 0, the more the higher its
entropy; a nearly forced token (``q`` near 1) keeps a uniform ``p``. Low-entropy text and edited
text are therefore *sparse* mixtures: a fraction of the tokens carries the signal and the rest is
null, where the sum of scores spends its variance on the null tokens.

- ``truncated_sum``: ``T_c = sum_t max(0, s_t - c)``, the scores' excess over a cut ``c``. The
  null is exact: by memorylessness the excess of each score above ``c`` is Exp(1), so given
  ``K ~ Binomial(n, e^-c)`` exceedances ``T_c ~ Gamma(K, 1)``:
  ``P[T_c >= x] = sum_k Binom(k; n, e^-c) Q(k, x)`` (``truncated_sum_sf``), any ``n``, any depth.
  In the p-values' terms it is ``sum_t max(0, log(p0 / p_t))`` with ``p0 = e^-c``: a sum of
  log-scores truncated at a threshold, so only the tail ``p_t < p0`` counts. This is the
  exact-null form of the truncated detector of Lattimore (arXiv 2603.30017), whose own
  statistic's formula was not at hand; ``c`` = 0 is the Gamma sum.
- ``higher_criticism``: Donoho and Jin's HC+ over the sorted ``p``:
  ``max sqrt(n) (i/n - p_(i)) / sqrt(p_(i) (1 - p_(i)))`` over ``i <= alpha0 n`` with
  ``p_(i) > 1/n``.
- ``tr_gof``: the truncated goodness-of-fit statistic of Li et al. (arXiv 2411.13868),
  ``n sup_{r >= p_(1)} K_s^+(F_n(r), r)`` with ``K_s`` the ``phi_s`` divergence between
  Bernoulli(u) and Bernoulli(v), ``K_s(u, v) = (1 - u^s v^(1-s) - (1-u)^s (1-v)^(1-s)) / (s (1-s))``
  (Kullback-Leibler at ``s = 1``), counted only where ``F_n(r) > r``.

The last two have no closed-form null: ``gof_table.json`` (beside this file) holds simulated
upper quantiles per number of scored tokens on a half-octave grid, built like the scan's table
(``python -m benchmarks.research.gof --out benchmarks/research/gof_table.json``); their p-values
read it at the next grid point up (quantiles made non-decreasing in ``n``) and are floored at
the smallest tabulated tail probability; above the grid they abstain (p = 1).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

TABLE_PATH = Path(__file__).with_name("gof_table.json")
HC_ALPHA0 = 0.5
TR_GOF_S = 2.0
_LN10 = math.log(10.0)


def _scores(scores: ArrayLike) -> NDArray[np.float64]:
    s = np.asarray(scores, np.float64)
    if s.ndim != 1:
        raise ValueError("scores must be one-dimensional")
    if s.size and (not np.all(np.isfinite(s)) or s.min() < 0.0):
        raise ValueError("scores must be finite and non-negative")
    return s


def tail_p_values(scores: ArrayLike) -> NDArray[np.float64]:
    """Per-token upper-tail p-values ``exp(-s) = 1 - r``: Uniform(0, 1) under the null."""
    return np.exp(-_scores(scores))


# --- the truncated sum: exact null ----------------------------------------------------------------


def truncated_sum(scores: ArrayLike, cut: float) -> float:
    """``sum max(0, s - cut)`` over the scored tokens."""
    s = _scores(scores)
    return float(np.maximum(s - cut, 0.0).sum())


def truncated_sum_sf(total: float, n: int, cut: float) -> float:
    """log10 ``P[T_c >= total]`` for ``n`` i.i.d. Exp(1) scores (exact: a binomial mixture of
    Gamma tails; the Gamma tail in log space where a float64 underflows)."""
    if n <= 0 or total <= 0.0:
        return 0.0
    k = np.arange(1, n + 1, dtype=np.float64)
    log_pmf = (
        special.gammaln(n + 1.0)
        - special.gammaln(k + 1.0)
        - special.gammaln(n - k + 1.0)
        - k * cut
        + (n - k) * math.log1p(-math.exp(-cut))
    )
    tail = special.gammaincc(k, total)
    with np.errstate(divide="ignore"):
        log_tail = np.log(tail)
    low = tail < 1e-280
    if np.any(low):  # Temme's asymptotic leading term of Q(k, x) (x > k here), in logs
        kl = k[low]
        log_tail[low] = (
            (kl - 1.0) * math.log(total)
            - total
            - special.gammaln(kl)
            - np.log(np.maximum(1.0 - (kl - 1.0) / total, 1e-300))
        )
    terms = log_pmf + log_tail
    top = float(terms.max())
    if not math.isfinite(top):
        return 0.0 if top > 0 else -math.inf
    return float(min(0.0, (top + math.log(np.exp(terms - top).sum())) / _LN10))


# --- statistics with simulated nulls ------------------------------------------------------------


def higher_criticism(scores: ArrayLike, alpha0: float = HC_ALPHA0) -> float:
    """HC+ of the tail p-values (0.0 when no order statistic qualifies)."""
    p = np.sort(tail_p_values(scores))
    return float(_hc_rows(p[None, :], alpha0)[0])


def _hc_rows(p: NDArray[np.float64], alpha0: float) -> NDArray[np.float64]:
    n = p.shape[1]
    if n == 0:
        return np.zeros(p.shape[0])
    top = max(1, int(math.floor(alpha0 * n)))
    ps = np.clip(p[:, :top], 1e-300, 1.0 - 1e-16)
    i = np.arange(1, top + 1, dtype=np.float64) / n
    hc = math.sqrt(n) * (i - ps) / np.sqrt(ps * (1.0 - ps))
    hc = np.where(ps > 1.0 / n, hc, -np.inf)
    return np.maximum(hc.max(axis=1), 0.0)


def tr_gof(scores: ArrayLike, s: float = TR_GOF_S) -> float:
    """Tr-GoF: ``n max_i K_s^+(i/n, p_(i))`` over the sorted tail p-values."""
    p = np.sort(tail_p_values(scores))
    return float(_gof_rows(p[None, :], s)[0])


def _gof_rows(p: NDArray[np.float64], s: float) -> NDArray[np.float64]:
    n = p.shape[1]
    if n == 0:
        return np.zeros(p.shape[0])
    v = np.clip(p, 1e-300, 1.0 - 1e-16)
    u = np.broadcast_to(np.arange(1, n + 1, dtype=np.float64) / n, v.shape)
    over = u > v
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if abs(s - 1.0) < 1e-12:  # Kullback-Leibler
            k = u * np.log(u / v) + np.where(
                u < 1.0, (1.0 - u) * np.log((1.0 - u) / (1.0 - v)), 0.0
            )
        else:
            # u^s v^(1-s) in logs (v may be 1e-300), (1-u)^s (1-v)^(1-s) likewise
            a = np.exp(s * np.log(u) + (1.0 - s) * np.log(v))
            b = np.where(u < 1.0, np.exp(s * np.log1p(-u) + (1.0 - s) * np.log1p(-v)), 0.0)
            k = (1.0 - a - b) / (s * (1.0 - s))
    k = np.where(over & np.isfinite(k), k, 0.0)
    return n * np.maximum(k.max(axis=1), 0.0)


# Statistics with simulated tables: name -> function of rows of sorted p-values [draws, n].
ROWS: dict[str, Callable[[NDArray[np.float64]], NDArray[np.float64]]] = {
    "hc": lambda p: _hc_rows(p, HC_ALPHA0),
    "tr_gof": lambda p: _gof_rows(p, TR_GOF_S),
    "tr_gof_kl": lambda p: _gof_rows(p, 1.0),
}


def statistic(name: str, scores: ArrayLike) -> float:
    """The named tabulated statistic of one text's scores."""
    p = np.sort(tail_p_values(scores))
    return float(ROWS[name](p[None, :])[0])


@functools.lru_cache(maxsize=1)
def _table() -> dict[str, tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]]:
    """Per statistic: (n grid, tail probabilities, quantiles ``[len(n), len(alpha)]``), the
    quantiles made non-decreasing in ``n`` (reading a document at the next grid point up is
    then conservative); NaN where too few draws resolve a tail probability."""
    data = json.loads(TABLE_PATH.read_text())
    out = {}
    for name, entry in data["statistics"].items():
        ns = np.asarray(entry["n"], np.int64)
        alphas = np.asarray(data["alpha"], np.float64)
        raw = [[np.nan if v is None else v for v in row] for row in entry["quantiles"]]
        q = np.asarray(raw, np.float64)
        filled = np.where(np.isnan(q), -np.inf, q)
        q = np.where(np.isnan(q), np.nan, np.maximum.accumulate(filled, axis=0))
        out[name] = (ns, alphas, q)
    return out


def table_log10_p(name: str, value: float, n: int) -> float:
    """log10 of the tabulated statistic's p-value for ``value`` over ``n`` scored tokens:
    log-linear interpolation between tabulated tail probabilities, the smallest one below
    them, 0 (abstain) for ``n`` above the grid or below its first point."""
    ns, alphas, q = _table()[name]
    if n <= 0 or n > ns[-1]:
        return 0.0
    row = int(np.searchsorted(ns, n))
    ok = ~np.isnan(q[row])
    quant, la = q[row][ok], np.log10(alphas[ok])  # quantiles rise as alpha falls
    if not quant.size or value <= quant[0]:
        return 0.0 if not quant.size or value < quant[0] else float(la[0])
    if value >= quant[-1]:
        return float(la[-1])
    return float(np.interp(value, quant, la))


def log10_p(name: str, scores: ArrayLike, cut: float | None = None) -> float:
    """log10 p-value of the named statistic on one text's scores: ``truncated_sum`` (exact;
    ``cut`` required) or a tabulated one."""
    s = _scores(scores)
    if name == "truncated_sum":
        if cut is None:
            raise ValueError("the truncated sum needs its cut")
        return truncated_sum_sf(truncated_sum(s, cut), s.size, cut)
    return table_log10_p(name, statistic(name, s), s.size)


# --- calibration --------------------------------------------------------------------------------

ALPHAS = 10.0 ** (-np.arange(4, 49) / 12.0)  # 0.46 .. 1e-4
GRID = [round(16 * 2 ** (k / 2)) for k in range(0, 19)]  # 16 .. 8,192 scored tokens
MIN_EVENTS = 40


def sims_for(n: int, sims: int) -> int:
    """Fewer draws for long texts (a draw costs about n log n): full count up to 1,024."""
    return sims if n <= 1024 else max(sims // 8, sims * 1024 // n)


def simulate(name: str, n: int, sims: int, seed: int, batch: int = 2_000_000) -> NDArray:
    """``sims`` null draws of the named statistic over ``n`` scored tokens."""
    rng = np.random.default_rng([seed, n, sum(map(ord, name))])
    rows = max(1, batch // n)
    out = []
    for start in range(0, sims, rows):
        p = np.sort(rng.random((min(rows, sims - start), n)), axis=1)
        out.append(ROWS[name](p))
    return np.concatenate(out)


def calibrate(sims: int, seed: int, largest: int) -> dict:
    """Quantiles of every tabulated statistic on the grid up to ``largest``."""
    stats_out = {}
    for name in ROWS:
        rows, ns = [], []
        for n in (g for g in GRID if g <= largest):
            count = sims_for(n, sims)
            t0 = time.perf_counter()
            draws = simulate(name, n, count, seed)
            rows.append(
                [
                    float(np.quantile(draws, 1.0 - a, method="higher"))
                    if a * count >= MIN_EVENTS
                    else None
                    for a in ALPHAS
                ]
            )
            ns.append(n)
            print(f"{name} n={n:>5} draws={count:>6} {time.perf_counter() - t0:5.1f}s", flush=True)
        stats_out[name] = {"n": ns, "sims": [sims_for(n, sims) for n in ns], "quantiles": rows}
    return {
        "hc_alpha0": HC_ALPHA0,
        "tr_gof_s": TR_GOF_S,
        "seed": seed,
        "alpha": [float(a) for a in ALPHAS],
        "statistics": stats_out,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate the GoF statistics' null table.")
    parser.add_argument("--sims", type=int, default=40000)
    parser.add_argument("--seed", type=int, default=20261204)
    parser.add_argument("--largest", type=int, default=GRID[-1])
    parser.add_argument("--out", default=str(TABLE_PATH))
    args = parser.parse_args(argv)
    table = calibrate(args.sims, args.seed, args.largest)
    Path(args.out).write_text(json.dumps(table, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
