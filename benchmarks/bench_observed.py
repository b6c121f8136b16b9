"""Observed-token weights for the model-assisted test: power on the code
cell at T=0.7/top-p 0.9 and the false-positive rate on human text, in one run.

Today's weighted test weights token t by ``E[s_t] - 1``, the expected excess score of a token
sampled from the prompt-free model's distribution there. Given the text, under the watermark
the chosen token x with sampling probability ``q_x`` has ``u ~ (1/q_x) u^(1/q_x - 1)``, so
``E[s | x] = f(q_x) = psi(1 + 1/q_x) + gamma_E``. Weights that are functions of the text
(never of the key) keep the null: a weighted sum of i.i.d. Exp(1) with the exact tail of
``detector.evidence.weighted``. Rules compared (each decided as the library does: Bonferroni with
the
Gamma test, ``2 min(p_gamma, p_weighted)``, unless named otherwise):

- ``es``: ``E[s] - 1`` (today's default decision);
- ``obs``: ``f(q_obs) - 1``, ``q_obs`` the observed token's probability after temperature and
  top-p, or at the temperature alone where top-p dropped it;
- ``obs cap C``: ``min(f(q_obs) - 1, C)``;
- ``max``, ``mean``: ``max(E[s], f(q_obs)) - 1``, ``(E[s] + f(q_obs)) / 2 - 1``;
- ``1-1/f``, ``1-1/es``: the exponential-tilt weights ``1 - 1/f(q_obs)`` and ``1 - 1/E[s]``
  (the Neyman-Pearson weights if the score were exponential with that mean);
- ``es+obs (3-way)``: the Gamma test, ``es`` and ``obs``, Bonferroni over three.

Development / evaluation split, fixed before any text was generated: the code cell's texts
with an even index are the development set (the rule is chosen there), those with an odd
index the held-out evaluation set. Human text: the first ``--chunks`` 200-token chunks per
genre of ``benchmarks.dispersion`` (read by the model at T=0.7/top-p 0.9, or with
``--read-at-t1`` every text at T=1 without top-p, as the web workers read), under ``--keys``
random keys plus the benchmark key.

Run: ``.venv/bin/python benchmarks/bench_observed.py [--chunks 24] [--keys 20]`` after
``bench_power.py --generate-only --cells "code T=0.7 top-p 0.9"``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy import special

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from benchmarks.bench_generate import KEY  # noqa: E402
from benchmarks.bench_power import cells, generate_cell, human_chunks  # noqa: E402
from benchmarks.observed_read import cached_read  # noqa: E402
from benchmarks.power import PREFIXES, THRESHOLD, prepare  # noqa: E402
from detector.core.stats import gamma_sf  # noqa: E402
from detector.evidence.weighted import clean_weights, log_sf_saddlepoint, weighted_sf, with_contexts  # noqa: E402

CELL = "code T=0.7 top-p 0.9"
EULER = 0.5772156649015329
LOG10_2 = math.log10(2.0)


def f(q: np.ndarray) -> np.ndarray:
    return special.digamma(1.0 + 1.0 / np.maximum(q, 1e-300)) + EULER


def q_obs(r: dict[str, np.ndarray]) -> np.ndarray:
    return np.where(r["qtop"] > 0, r["qtop"], r["qt"])


def kept(q: np.ndarray, tau: float, width: int = 4) -> np.ndarray:
    """1 where neither the token nor any of the ``width`` before it reads below ``tau``."""
    return (~with_contexts(np.asarray(q) < tau, width)).astype(np.float64)


Rule = Callable[[dict[str, np.ndarray]], np.ndarray]
RULES: dict[str, Rule] = {
    "es": lambda r: r["es"] - 1.0,
    "obs": lambda r: f(q_obs(r)) - 1.0,
    "obs cap 1": lambda r: np.minimum(f(q_obs(r)) - 1.0, 1.0),
    "obs cap 2": lambda r: np.minimum(f(q_obs(r)) - 1.0, 2.0),
    "obs cap 3": lambda r: np.minimum(f(q_obs(r)) - 1.0, 3.0),
    "max": lambda r: np.maximum(r["es"], f(q_obs(r))) - 1.0,
    "max cap 2": lambda r: np.minimum(np.maximum(r["es"], f(q_obs(r))) - 1.0, 2.0),
    "mean": lambda r: 0.5 * (r["es"] + f(q_obs(r))) - 1.0,
    "1-1/f": lambda r: 1.0 - 1.0 / f(q_obs(r)),
    "1-1/es": lambda r: 1.0 - 1.0 / r["es"],
    **{
        f"obs cap 2 masked {tau:g}": (
            lambda r, tau=tau: np.minimum(f(q_obs(r)) - 1.0, 2.0) * kept(q_obs(r), tau)
        )
        for tau in (1e-4, 3e-4, 1e-3)
    },
}
DECISIONS = [*RULES, "es+obs (3-way)"]


def weighted_log10_p(w: np.ndarray, s: np.ndarray, exact: bool) -> float:
    """log10 of the weighted test's p-value; without ``exact``, only as exact as deciding at
    ``THRESHOLD / 3 .. THRESHOLD`` needs (far from it: a normal screen or the saddlepoint)."""
    w = np.maximum(w, 0.0)
    x = float(w @ s)
    if exact:
        return weighted_sf(w, x)[1]
    cw = clean_weights(w)
    if not cw.size or x <= 0:
        return 0.0
    mean, sd = float(cw.sum()), float(np.sqrt((cw**2).sum()))
    if x < mean + sd:
        return -0.5  # P >= 0.1 there (the worst case, one dominant weight, gives e^-2)
    approx = log_sf_saddlepoint(cw, x) / math.log(10.0)
    if abs(approx - math.log10(THRESHOLD)) < 1.0:
        return weighted_sf(cw, x)[1]
    return approx


def decisions(
    text, reads: dict[str, np.ndarray], key: int, length: int, exact: bool
) -> dict[str, float]:
    """Decision log10 p of each rule on the first ``length`` tokens under ``key``."""
    mask = text.mask[:length]
    s = text.scores(key)[:length][mask]
    if s.size == 0:
        return dict.fromkeys(DECISIONS, 0.0)
    g = gamma_sf(float(s.sum()), s.size)[1]
    cut = {k: v[:length][mask] for k, v in reads.items()}
    out, wp = {}, {}
    for name, rule in RULES.items():
        wp[name] = weighted_log10_p(rule(cut), s, exact)
        out[name] = min(0.0, LOG10_2 + min(g, wp[name]))
    out["es+obs (3-way)"] = min(0.0, math.log10(3.0) + min(g, wp["es"], wp["obs"]))
    out["gamma"] = g
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=24, help="human chunks per genre read")
    parser.add_argument("--keys", type=int, default=20, help="random keys on human text")
    parser.add_argument("--no-human", action="store_true")
    parser.add_argument(
        "--read-at-t1",
        action="store_true",
        help="the model reads every text at T=1 without top-p (as the web workers do)",
    )
    args = parser.parse_args()
    spec = cells(50)[CELL]
    ids = generate_cell(CELL, spec, 260)
    suffix, read_t, read_p = (" read at T=1", 1.0, 1.0) if args.read_at_t1 else ("", 0.7, 0.9)
    reads = cached_read(CELL + suffix, ids, read_t, read_p)
    texts = prepare(ids)
    lt = math.log10(THRESHOLD)
    print(
        f"\n{time.strftime('%Y-%m-%d %H:%M')} {CELL}, key fixed, alpha {THRESHOLD}, "
        f"read at T={read_t} / top-p {read_p}"
    )
    print("| set | decision | n | detected 50 / 100 / 200 % | median log10 p at 200 |")
    print("| --- | --- | --- | --- | --- |")
    per = {
        n: [decisions(t, r, KEY, n, True) for t, r in zip(texts, reads, strict=True)]
        for n in PREFIXES
    }
    for label, idx in (("dev (even)", range(0, 50, 2)), ("eval (odd)", range(1, 50, 2))):
        for name in ["gamma", *DECISIONS]:
            rates = [np.mean([per[n][i][name] <= lt for i in idx]) for n in PREFIXES]
            med = float(np.median([per[200][i][name] for i in idx]))
            det = " / ".join(f"{100 * r:.0f}" for r in rates)
            print(f"| {label} | {name} | {len(idx)} | {det} | {med:.2f} |", flush=True)
    if args.no_human:
        return
    human = human_chunks(args.chunks, max(PREFIXES))
    keys = [KEY, *np.random.default_rng(7).integers(1, 2**63, args.keys).tolist()]
    print(f"\nhuman text, {args.chunks} chunks per genre x {len(keys)} keys, alpha {THRESHOLD}")
    print("| genre | decision | tests | FPR 50 / 100 / 200 % | worst key at 200 % |")
    print("| --- | --- | --- | --- | --- |")
    for genre, pieces in human.items():
        t0 = time.perf_counter()
        hreads = cached_read(f"human {genre}{suffix}", pieces[:32], read_t, read_p)
        if len(pieces) > 32:  # read in two parts (the first 32 chunks, then the rest)
            name = f"human {genre} 32-{len(pieces)}{suffix}"
            hreads += cached_read(name, pieces[32:], read_t, read_p)
        prepared = prepare(pieces)
        flags = {name: np.zeros((len(keys), len(PREFIXES))) for name in ["gamma", *DECISIONS]}
        for k, key in enumerate(keys):
            for t, r in zip(prepared, hreads, strict=True):
                for j, n in enumerate(PREFIXES):
                    for name, p in decisions(t, r, int(key), n, False).items():
                        flags[name][k, j] += p <= lt
        for name, fl in flags.items():
            rates = fl.sum(0) / (len(keys) * len(pieces))
            worst = fl[:, -1].max() / len(pieces)
            fpr = " / ".join(f"{100 * r:.2f}" for r in rates)
            print(f"| {genre} | {name} | {fl.shape[0] * len(pieces)} | {fpr} | {100 * worst:.1f} |")
        print(f"({genre}: {time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
