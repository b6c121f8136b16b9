"""What every part of the robustness benchmark shares: its settings, the columns a run
reports (``RUN``, set by the command line), and two small helpers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmarks.bench_generate import KEY

__all__ = ["KEY"]

THRESHOLD = 0.01
TOKENS = 200
SAMPLINGS = {"T=1": (1.0, 1.0), "T=0.7 top-p 0.9": (0.7, 0.9)}
RATES = (0.1, 0.2, 0.3)
KINDS = ("substitute", "insert", "delete")
CELLS = tuple(f"{kind} {label}" for kind in ("creative", "code") for label in SAMPLINGS)
PLANT = 120
HUMAN_AROUND = 1200

BASE_COLUMNS = ("global", "localized", "robust", "combined")
# With --assist: SmolLM2's E[s] per token (detector.reading.model, as the product reads it: T=1,
# BOS).
# "assisted unmasked": the assisted decision with the observed-token weights of every token,
# suspected edits included (the library's rule before suspected edits weighed 0).
# "assisted localized": the web product's verdict with a model, Bonferroni over the localized
# decision's document p-value and the weighted test.
ASSISTED_COLUMNS = (
    "weighted",
    "assisted",
    "assisted unmasked",
    "w-robust",
    "assisted+w-robust",
    "assisted localized",
)
ORACLE_COLUMNS = (
    "oracle Gamma",
    "oracle weighted",
    "oracle weighted@sampling",
    "oracle LR",
    "oracle observed",
)


@dataclass
class Run:
    """The columns of this run and the models behind them: ``assist`` (a ``ModelAssist``)
    with ``--assist``, its readings cached per text in ``cache`` (the keys share them);
    ``oracle_model``, the ``ModelAssist`` that reads the unedited texts, with ``--oracle`` or
    ``--masked``."""

    columns: tuple[str, ...] = BASE_COLUMNS
    oracle: tuple[str, ...] = ()  # ORACLE_COLUMNS with --oracle
    assist: Any = None
    cache: dict[bytes, Any] = field(default_factory=dict)
    oracle_model: Any = None


RUN = Run()


def weighted_log_sf(weights: np.ndarray, x: float) -> float:
    """Natural log of ``P[sum w_i E_i >= x]`` (``detector.evidence.weighted.weighted_sf``);
    where its closed form for a few distinct weights loses its precision (clustered weights
    far in the tail), the saddlepoint below 1e-30 and the Laplace inversion above, as for many
    weights."""
    from detector.evidence import weighted as wt

    try:
        return wt.weighted_sf(weights, x)[1] * math.log(10.0)
    except ArithmeticError:
        approx = wt.log_sf_saddlepoint(weights, x)
        return (
            approx
            if approx <= wt.EXACT_ABOVE_LOG10 * math.log(10.0)
            else wt.log_sf_exact(weights, x)
        )


def _pct(v: float) -> str:
    return "–" if math.isnan(v) else f"{100 * v:.1f}"
