"""Random token edits with their record: which source token every edited token is."""

from __future__ import annotations

from typing import Any

import numpy as np


def edit_tracked(
    ids: np.ndarray, kind: str, rate: float, pool: np.ndarray, rng: Any
) -> tuple[np.ndarray, np.ndarray]:
    """``rate`` of the positions substituted, preceded by an insertion, or deleted; with the
    edit's record: the position in ``ids`` of every token of the result, -1 where the token
    is new (substituted or inserted)."""
    hit = rng.random(ids.shape[0]) < rate
    fresh = pool[rng.integers(0, pool.shape[0], ids.shape[0])]
    where = np.arange(ids.shape[0])
    if kind == "substitute":
        return np.where(hit, fresh, ids), np.where(hit, -1, where)
    if kind == "delete":
        return ids[~hit], where[~hit]
    out, origin = [], []
    for i, (token, h, new) in enumerate(zip(ids, hit, fresh, strict=True)):
        if h:
            out.append(new)
            origin.append(-1)
        out.append(token)
        origin.append(i)
    return np.asarray(out, np.int64), np.asarray(origin, np.int64)


def edit(ids: np.ndarray, kind: str, rate: float, pool: np.ndarray, rng: Any) -> np.ndarray:
    """``rate`` of the positions substituted, preceded by an insertion, or deleted."""
    return edit_tracked(ids, kind, rate, pool, rng)[0]


def intact_mask(origin: np.ndarray, width: int = 4) -> np.ndarray:
    """Where an edited text's token and its ``width`` context tokens are those of the source
    at the same relative places (``origin`` as ``edit_tracked`` records it): the token's
    keyed draw is the generator's. The first tokens' contexts reach into the left padding,
    which matches only where the source's does too (``origin[j] == j``)."""
    origin = np.asarray(origin, np.int64)
    n = origin.shape[0]
    ok = origin >= 0
    # New tokens never match: not even a context position that the source pads.
    placed = np.where(ok, origin, np.iinfo(np.int64).min)
    for k in range(1, width + 1):
        before = np.concatenate([np.arange(-k, 0), placed[: max(n - k, 0)]])[:n]
        ok &= before == origin - k
    return ok
