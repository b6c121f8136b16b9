"""The scan statistic behind span localization, and its null calibrated by simulation.

After de-duplication the scores of a text are i.i.d. Exp(1) under "no watermark", whatever
the text (docs/spec.md §3), so the null distribution of any statistic computed from the scores
alone depends only on their number ``n`` and on how the statistic is computed. The statistic
here is ``T = min log10 P[Gamma(L, 1) >= S]`` over windows of ``L >= MIN_WINDOW`` consecutive
scored tokens with sum ``S``: a coarse scan over lengths in a geometric grid and starts on a
stride of about L/16, then a local refinement of the best window's two ends. The refinement is
part of the statistic, so the simulated null covers the whole search.

``scan_table.json`` (beside this file) holds quantiles of ``T`` for ``n`` on a half-octave
grid; ``python -m detector.evidence.scan --out detector/evidence/scan_table.json``
regenerates it. The p-value of an observed ``T`` is read from the table where the
simulation resolves it, and below the table's smallest tail probability from the union
bound over every window (``N_windows(n) * 10**T``, always valid): see ``scan_p_value``.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy import special

from detector.core.contexts import COMPILED_FROM

MIN_WINDOW = 32  # scored tokens: shorter runs cannot carry a usable signal at real entropies
LENGTH_RATIO = 1.25  # window lengths grow by this factor; refinement closes the gaps
STRIDE_FRACTION = 16  # starts every L/16 scored tokens
REFINE_SPAN = 128  # most positions a refined end moves from the coarse window's
TABLE_PATH = Path(__file__).with_name("scan_table.json")
_LN10 = math.log(10.0)
_UNDERFLOW = 1e-280
_LOG10_UNDERFLOW = math.log10(_UNDERFLOW)


def log10_gamma_sf(length: NDArray, total: NDArray) -> NDArray[np.float64]:
    """Vectorized log10 P[Gamma(L, 1) >= S]; an asymptotic form where the float underflows.

    The asymptotic branch (first term of the continued fraction) only matters far below any
    threshold, where it keeps windows ordered instead of all reading -inf.
    """
    a = np.asarray(length, np.float64)
    x = np.asarray(total, np.float64)
    q = special.gammaincc(a, np.maximum(x, 0.0))
    out = np.log10(np.maximum(q, _UNDERFLOW))
    if out.min(initial=0.0) > _LOG10_UNDERFLOW:  # the common case: nothing underflowed
        return out
    low = q <= _UNDERFLOW
    if np.any(low):
        al, xl = a[low] if a.ndim else a, x[low]
        ln = (al - 1.0) * np.log(xl) - xl - special.gammaln(al) - np.log1p(-(al - 1.0) / xl)
        out[low] = ln / _LN10
    return out


@dataclass(frozen=True)
class Window:
    """A window ``[start, stop)`` over scored-token indices and its statistic."""

    start: int
    stop: int
    log10_p: float  # the window's own (unadjusted) log10 p-value


def _lengths(n: int) -> NDArray[np.int64]:
    if n < MIN_WINDOW:
        return np.zeros(0, np.int64)
    count = int(math.floor(math.log(n / MIN_WINDOW) / math.log(LENGTH_RATIO))) + 1
    grid = np.round(MIN_WINDOW * LENGTH_RATIO ** np.arange(count)).astype(np.int64)
    return np.unique(np.append(grid[grid <= n], n))


@functools.lru_cache(maxsize=4096)
def _family(n: int) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """The coarse window family over ``n`` scored tokens, flattened: (starts, lengths, offsets
    of each length's block). About ``2.5 n`` windows; cached per ``n``."""
    starts_all, lengths_all, offsets = [], [], [0]
    for length in _lengths(n):
        step = max(1, int(length) // STRIDE_FRACTION)
        starts = np.arange(0, n - length + 1, step)
        if starts[-1] != n - length:
            starts = np.append(starts, n - length)
        starts_all.append(starts)
        lengths_all.append(np.full(starts.shape[0], length, np.int64))
        offsets.append(offsets[-1] + starts.shape[0])
    if not starts_all:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(1, np.int64)
    return np.concatenate(starts_all), np.concatenate(lengths_all), np.asarray(offsets, np.int64)


def _coarse(cum: NDArray, blocked: NDArray) -> Window | None:
    """Best window of the family that holds no blocked position (``cum``/``blocked``: prefix
    sums of scores and of blocked positions)."""
    starts, lengths, offsets = _family(cum.shape[0] - 1)
    if not starts.size:
        return None
    stops = starts + lengths
    sums = cum[stops] - cum[starts]
    if blocked[-1]:
        sums = np.where(blocked[stops] == blocked[starts], sums, -np.inf)
    best = np.maximum.reduceat(sums, offsets[:-1])  # best sum of each length
    ok = np.isfinite(best)
    if not ok.any():
        return None
    lp = np.full(best.shape[0], np.inf)
    lp[ok] = log10_gamma_sf(lengths[offsets[:-1]][ok], best[ok])
    k = int(np.argmin(lp))
    block = sums[offsets[k] : offsets[k + 1]]
    i = offsets[k] + int(np.argmax(block))
    return Window(int(starts[i]), int(stops[i]), float(lp[k]))


def _free_run(blocked_mask: NDArray[np.bool_], start: int, stop: int) -> tuple[int, int]:
    """The maximal run of unblocked positions holding ``[start, stop)``."""
    where = np.flatnonzero(blocked_mask)
    if not where.size:
        return 0, blocked_mask.shape[0]
    k = int(np.searchsorted(where, start))
    lo = int(where[k - 1]) + 1 if k > 0 else 0
    hi = int(where[k]) if k < where.size else blocked_mask.shape[0]
    return lo, hi


def _refine(cum: NDArray, blocked_mask: NDArray[np.bool_], w: Window) -> Window:
    """Move each end of ``w`` (alternately, a few rounds) to where the window's p is smallest."""
    lo, hi = _free_run(blocked_mask, w.start, w.stop)
    reach = min(REFINE_SPAN, max(4, (w.stop - w.start) // 4))
    start, stop, best = w.start, w.stop, w.log10_p
    for _ in range(3):
        moved = False
        starts = np.arange(max(lo, start - reach), min(start + reach, stop - MIN_WINDOW) + 1)
        if starts.size:
            lp = log10_gamma_sf(stop - starts, cum[stop] - cum[starts])
            i = int(np.argmin(lp))
            if lp[i] < best:
                start, best, moved = int(starts[i]), float(lp[i]), True
        stops = np.arange(max(start + MIN_WINDOW, stop - reach), min(hi, stop + reach) + 1)
        if stops.size:
            lp = log10_gamma_sf(stops - start, cum[stops] - cum[start])
            i = int(np.argmin(lp))
            if lp[i] < best:
                stop, best, moved = int(stops[i]), float(lp[i]), True
        if not moved:
            break
    return Window(start, stop, best)


def best_window(scores: NDArray[np.float64], blocked_mask: NDArray[np.bool_]) -> Window | None:
    """The scan: best window of unblocked scored tokens (``None`` if none fits)."""
    cum = np.concatenate([[0.0], np.cumsum(scores, dtype=np.float64)])
    blocked = np.concatenate([[0], np.cumsum(blocked_mask, dtype=np.int64)])
    coarse = _coarse(cum, blocked)
    return None if coarse is None else _refine(cum, blocked_mask, coarse)


def _first_in_segments(hit: NDArray[np.bool_], bounds: NDArray[np.int64]) -> NDArray[np.int64]:
    """Index of the first ``True`` of each segment ``[bounds[k], bounds[k + 1])`` of ``hit``
    (every segment holds one)."""
    where = np.flatnonzero(hit)
    return where[np.searchsorted(where, bounds[:-1])]


def _ragged(lo: NDArray[np.int64], hi: NDArray[np.int64]) -> tuple[NDArray, NDArray, NDArray]:
    """Concatenated ``arange(lo[k], hi[k])`` over k: (values, owner k, segment bounds)."""
    counts = np.maximum(hi - lo, 0)
    bounds = np.concatenate([[0], np.cumsum(counts)])
    owner = np.repeat(np.arange(lo.shape[0]), counts)
    values = lo[owner] + (np.arange(bounds[-1]) - bounds[:-1][owner])
    return values, owner, bounds


def best_windows(scores: Sequence[NDArray[np.float64]]) -> list[Window | None]:
    """``best_window(s, no blocked position)`` for every ``s`` of ``scores`` at once.

    The audit path scans thousands of short texts; one numpy pass over all of them replaces
    a dozen small calls per text. Every window sum and p-value is computed by the same
    operations on the same prefix sums as ``best_window`` and ties break the same way (first
    minimum), so the windows are identical (tested).
    """
    out: list[Window | None] = [None] * len(scores)
    keep = [i for i, s in enumerate(scores) if s.shape[0] >= MIN_WINDOW]
    if not keep:
        return out
    cums = [np.concatenate([[0.0], np.cumsum(scores[i], dtype=np.float64)]) for i in keep]
    base = np.cumsum([0] + [c.shape[0] for c in cums])[:-1]
    cum = cums[0] if len(cums) == 1 else np.concatenate(cums)
    ns = np.asarray([c.shape[0] - 1 for c in cums], np.int64)
    if len(keep) == 1 and ns[0] >= COMPILED_FROM:
        # One long text: the compiled coarse pass, without the family's arrays (~2.5 n).
        start, stop, best_lp = _coarse_compiled(cum)
    else:
        start, stop, best_lp = _coarse_batch(cum, base, ns)
    start, stop, best_lp = _refine_batch(cum, base, ns, start, stop, best_lp)
    for t, i_text in enumerate(keep):
        out[i_text] = Window(int(start[t]), int(stop[t]), float(best_lp[t]))
    return out


def _coarse_compiled(cum: NDArray[np.float64]) -> tuple[NDArray, NDArray, NDArray]:
    """``_coarse_batch`` of one text by ``detector.core.compiled.coarse_scan``: the same sums
    by the same subtraction, the same first maximum per length and first minimum p."""
    from detector.core import compiled

    lengths = _lengths(cum.shape[0] - 1)
    best, where = compiled.coarse_scan(cum, lengths, STRIDE_FRACTION)
    lp = log10_gamma_sf(lengths, best)
    k = int(np.argmin(lp))
    start = np.asarray([where[k]], np.int64)
    return start, start + lengths[k], lp[k : k + 1].copy()


def _coarse_batch(
    cum: NDArray[np.float64], base: NDArray[np.int64], ns: NDArray[np.int64]
) -> tuple[NDArray, NDArray, NDArray]:
    """Each text's best coarse window (start, stop, log10 p) by numpy over every text's
    family at once."""
    fams = [_family(int(n)) for n in ns]
    # Coarse: best sum per (text, length), the length of smallest p per text, its best start.
    starts = np.concatenate([f[0] + b for f, b in zip(fams, base, strict=True)])
    lengths = np.concatenate([f[1] for f in fams])
    sizes = np.asarray([f[0].shape[0] for f in fams], np.int64)
    wbase = np.concatenate([[0], np.cumsum(sizes)])
    blocks = np.concatenate([f[2][:-1] + w for f, w in zip(fams, wbase[:-1], strict=True)])
    nblocks = np.asarray([f[2].shape[0] - 1 for f in fams], np.int64)
    bbase = np.concatenate([[0], np.cumsum(nblocks)])
    sums = cum[starts + lengths] - cum[starts]
    best = np.maximum.reduceat(sums, blocks)
    lp = log10_gamma_sf(lengths[blocks], best)
    text_min = np.minimum.reduceat(lp, bbase[:-1])
    k = _first_in_segments(lp == np.repeat(text_min, nblocks), bbase)
    block_end = np.append(blocks[1:], sums.shape[0])
    seg = np.concatenate([[0], np.cumsum(block_end[k] - blocks[k])])
    idx, owner, _ = _ragged(blocks[k], block_end[k])
    i = idx[_first_in_segments(sums[idx] == best[k][owner], seg)]
    start = starts[i] - base
    return start, start + lengths[i], lp[k].copy()


def _refine_batch(
    cum: NDArray[np.float64],
    base: NDArray[np.int64],
    ns: NDArray[np.int64],
    start: NDArray[np.int64],
    stop: NDArray[np.int64],
    best_lp: NDArray[np.float64],
) -> tuple[NDArray, NDArray, NDArray]:
    """Refinement of every text's coarse window, as ``_refine`` with the whole text free
    (lo = 0, hi = n)."""
    reach = np.minimum(REFINE_SPAN, np.maximum(4, (stop - start) // 4))
    for _ in range(3):
        for side in ("start", "stop"):
            if side == "start":
                lo_c = np.maximum(0, start - reach)
                hi_c = np.minimum(start + reach, stop - MIN_WINDOW) + 1
            else:
                lo_c = np.maximum(start + MIN_WINDOW, stop - reach)
                hi_c = np.minimum(ns, stop + reach) + 1
            cand, owner, bounds = _ragged(lo_c, hi_c)
            if not cand.size:
                continue
            if side == "start":
                lpc = log10_gamma_sf(
                    stop[owner] - cand, cum[base[owner] + stop[owner]] - cum[base[owner] + cand]
                )
            else:
                lpc = log10_gamma_sf(
                    cand - start[owner], cum[base[owner] + cand] - cum[base[owner] + start[owner]]
                )
            has = bounds[1:] > bounds[:-1]
            seg_min = np.full(ns.shape[0], np.inf)
            seg_min[has] = np.minimum.reduceat(lpc, bounds[:-1][has])
            j = np.zeros(ns.shape[0], np.int64)
            j[has] = _first_in_segments(lpc == seg_min[owner], bounds[np.append(has, True)])
            moved = has & (seg_min < best_lp)
            if side == "start":
                start = np.where(moved, cand[j], start)
            else:
                stop = np.where(moved, cand[j], stop)
            best_lp = np.where(moved, seg_min, best_lp)
    return start, stop, best_lp


def human_stretch(scores: NDArray[np.float64], w: Window) -> tuple[int, int] | None:
    """The longest-deficit stretch inside ``w`` that reads as human text, if there is one.

    A window of smallest p-value happily swallows the human gap between two strong spans
    (more evidence outweighs the dilution). Kadane's maximum-sum run of ``m - s`` with ``m``
    a quarter of the way from the null mean 1 to the window's mean finds the weakest stretch;
    it counts as human when it is at least ``MIN_WINDOW`` long, its mean is at most ``m`` and
    both sides keep ``MIN_WINDOW`` tokens. Only reported boundaries depend on this: the scan
    statistic and its p-value do not.
    """
    x = scores[w.start : w.stop]
    m = 1.0 + 0.25 * (float(x.mean()) - 1.0)
    if m <= 1.0:
        return None
    run = np.concatenate([[0.0], np.cumsum(m - x)])
    low = np.minimum.accumulate(run)
    stop = int(np.argmax(run - low))
    start = int(np.flatnonzero(run[: stop + 1] == low[stop])[-1])
    if stop - start < MIN_WINDOW or start < MIN_WINDOW or x.shape[0] - stop < MIN_WINDOW:
        return None
    return w.start + start, w.start + stop


def scan_statistic(scores: NDArray[np.float64]) -> float:
    """``T`` of a whole sequence of scores (0.0 when it is shorter than ``MIN_WINDOW``)."""
    w = best_window(scores, np.zeros(scores.shape[0], np.bool_))
    return 0.0 if w is None else w.log10_p


# --- the null table ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _table() -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    """(n grid, tail probabilities, quantiles ``[len(n), len(alpha)]``) from the shipped JSON.

    Untabulated tail probabilities (too few draws) are NaN. Quantiles are made non-increasing
    in ``n`` (more windows can only make ``T`` smaller), and a document's ``n`` is read at the
    next grid point up: both err on the safe side.
    """
    data = json.loads(TABLE_PATH.read_text())
    ns = np.asarray(data["n"], np.int64)
    alphas = np.asarray(data["alpha"], np.float64)
    raw = [[np.nan if v is None else v for v in row] for row in data["quantiles"]]
    q = np.asarray(raw, np.float64)
    filled = np.where(np.isnan(q), np.inf, q)
    q = np.where(np.isnan(q), np.nan, np.minimum.accumulate(filled, axis=0))
    return ns, alphas, q


def num_windows(n: int) -> float:
    """How many windows of at least ``MIN_WINDOW`` scored tokens ``n`` tokens hold."""
    k = n - MIN_WINDOW + 1
    return 0.0 if k <= 0 else k * (k + 1) / 2.0


def scan_log10_p(statistic: float, n: int) -> float:
    """log10 of the scan's p-value for an observed ``T`` over ``n`` scored tokens.

    Inside the simulated range: log-linear interpolation between tabulated tail
    probabilities (the tail of a minimum over windows is close to exponential in ``T``).
    Beyond it, or for ``n`` above the grid: the union bound over all windows, capped at the
    smallest tabulated probability. Each branch is a valid p-value and they meet monotonically.
    """
    if n < MIN_WINDOW:
        return 0.0
    union = min(0.0, math.log10(num_windows(n)) + statistic)
    ns, alphas, q = _table()
    row = int(np.searchsorted(ns, n))
    if row >= ns.shape[0]:
        return union
    ok = ~np.isnan(q[row])
    quant, la = q[row][ok], np.log10(alphas[ok])  # quantiles fall as alpha falls
    if statistic >= quant[0]:
        return 0.0
    if statistic < quant[-1]:
        return min(float(la[-1]), union)
    return float(np.interp(-statistic, -quant, la))


# --- calibration --------------------------------------------------------------------------------


def simulate(n: int, sims: int, seed: int) -> NDArray[np.float64]:
    """``sims`` draws of ``T`` under the null for ``n`` scored tokens."""
    rng = np.random.default_rng([seed, n])
    return np.array([scan_statistic(rng.standard_exponential(n)) for _ in range(sims)])


ALPHAS = 10.0 ** (-np.arange(4, 40) / 12.0)  # 0.46 .. 5.6e-4, with 0.1, 0.01, 0.001
GRID = [round(32 * 2 ** (k / 2)) for k in range(0, 23)]  # 32 .. 65,536 (texts <= 200 KB)
MIN_EVENTS = 50  # a tail probability is tabulated only where >= 50 draws fall below it


def sims_for(n: int, sims: int) -> int:
    """Fewer draws for long documents (a draw costs ~n): full count up to 4,096 tokens."""
    return sims if n <= 4096 else max(sims // 5, sims * 4096 // n)


def calibrate(sims: int, seed: int, largest: int, partial: Path | None = None) -> dict:
    """Simulate every grid point; rows already in ``partial`` (same settings) are kept."""
    done: dict[int, list[float | None]] = {}
    if partial is not None and partial.is_file():
        done = {int(k): v for k, v in json.loads(partial.read_text()).items()}
    for n in (g for g in GRID if g <= largest):
        if n in done:
            continue
        count = sims_for(n, sims)
        t0 = time.perf_counter()
        draws = simulate(n, count, seed)
        done[n] = [
            float(np.quantile(draws, a, method="lower")) if a * count >= MIN_EVENTS else None
            for a in ALPHAS
        ]
        if partial is not None:
            partial.write_text(json.dumps({str(k): v for k, v in done.items()}))
        print(f"n={n:>6} draws={count:>6} {time.perf_counter() - t0:6.1f}s", flush=True)
    ns = sorted(done)
    return {
        "statistic": "min log10 Gamma sf over windows >= min_window: coarse grid + refinement",
        "min_window": MIN_WINDOW,
        "length_ratio": LENGTH_RATIO,
        "stride_fraction": STRIDE_FRACTION,
        "refine_span": REFINE_SPAN,
        "sims": {str(n): sims_for(n, sims) for n in ns},
        "seed": seed,
        "n": ns,
        "alpha": [float(a) for a in ALPHAS],
        "quantiles": [done[n] for n in ns],  # null where fewer than MIN_EVENTS draws fall below
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate the scan statistic's null table.")
    parser.add_argument("--sims", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--largest", type=int, default=GRID[-1])
    parser.add_argument("--out", default=str(TABLE_PATH))
    parser.add_argument("--partial", help="keep finished rows here and resume from them")
    args = parser.parse_args(argv)
    partial = Path(args.partial) if args.partial else None
    table = calibrate(args.sims, args.seed, args.largest, partial)
    Path(args.out).write_text(json.dumps(table, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
