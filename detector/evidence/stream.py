"""Anytime-valid streaming detection: an e-process over the de-duplicated token scores.

Re-running the fixed-length Gamma test after every token and stopping at the first p <= 0.01
is not a 1% test: over a long human stream the running p-value dips below any threshold far
more often than 1% of the time (``tests/detector/evidence/test_stream.py`` measures it). An
e-process can be checked after every token at no cost in validity.

The e-process. Under "no watermark" each scored token's score ``s`` is Exp(1) given the past
(its context is new, so its keyed uniform is fresh), and for every ``lambda`` in (0, 1]
``lambda * exp((1 - lambda) s)`` has mean 1: it is the likelihood ratio of Exp(lambda) against
Exp(1). The product over the ``n`` scored tokens, ``lambda^n exp((1 - lambda) S)``, is a
nonnegative martingale, and so is its mixture over a uniform prior on ``lambda``, which has a
closed form in the running count and sum only (O(1) per token):

    E(n, S) = integral_0^1 lambda^n exp((1 - lambda) S) d lambda
            = exp(S) * gamma_lower(n + 1, S) / S^(n + 1).

For ``dual_key_gumbel`` the null score ``(1 - a) s_A + a s_B`` is not Exp(1); the e-process is
a uniform mixture over a grid of ``theta`` of ``exp(theta S) / M(theta)^n`` with ``M`` that
score's moment generating function (also O(1) per token).

Ville's inequality bounds the chance that a null e-process ever reaches ``1 / threshold`` by
``threshold``: the stream is flagged the first time it does, and ``1 / max E`` so far is an
anytime-valid p-value. Several keys: the average of their e-processes is an e-process (it
dominates Bonferroni on the maximum), so one threshold covers the family.

De-duplication is over the whole stream (a key's ``max_history`` is not applied): skipping
more repeats never breaks validity. Persisted streams (``to_bytes``) carry the seen contexts.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mpmath
import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from detector.core import prf, scoring
from detector.core.config import DEFAULT_THRESHOLD, KeyConfig, as_key_config
from detector.core.contexts import PAD, as_token_array

DUAL_GRID = 32  # theta values of the dual-key mixture; the grid's cost is per append, not n
_LOG10E = math.log10(math.e)


def log_e_gumbel(n: ArrayLike, total: ArrayLike) -> NDArray[np.float64]:
    """Natural log of the uniform-mixture e-process after ``n`` scored tokens of sum ``total``."""
    n = np.asarray(n, np.float64)
    s = np.asarray(total, np.float64)
    out = np.zeros(np.broadcast(n, s).shape, np.float64)
    n, s = np.broadcast_to(n, out.shape), np.broadcast_to(s, out.shape)
    zero = s <= 0.0
    out[zero] = -np.log1p(n[zero])  # integral of lambda^n
    pos = ~zero
    with np.errstate(divide="ignore"):
        lower = np.log(special.gammainc(n[pos] + 1.0, s[pos]))
    out[pos] = s[pos] + special.gammaln(n[pos] + 1.0) + lower - (n[pos] + 1.0) * np.log(s[pos])
    for i in np.flatnonzero(pos & ~np.isfinite(out)):  # gammainc underflowed: S far below n
        out.flat[i] = _log_e_gumbel_exact(float(n.flat[i]), float(s.flat[i]))
    return out


def _log_e_gumbel_exact(n: float, s: float) -> float:
    lower = mpmath.gammainc(n + 1.0, 0, s)  # unregularized lower incomplete gamma
    return float(s + mpmath.log(lower) - (n + 1.0) * mpmath.log(s))


def _dual_grid(alpha: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(theta, log M(theta)) of the dual-key score's Exp mixture; M is finite below the max."""
    top = 1.0 / max(alpha, 1.0 - alpha)
    theta = top * np.arange(1, DUAL_GRID + 1) / (DUAL_GRID + 1)
    log_m = -np.log1p(-theta * (1.0 - alpha)) - np.log1p(-theta * alpha)
    return theta, log_m


def log_e_dual(n: ArrayLike, total: ArrayLike, alpha: float) -> NDArray[np.float64]:
    """Natural log of the dual-key e-process (uniform mixture over a grid of theta)."""
    theta, log_m = _dual_grid(alpha)
    n = np.asarray(n, np.float64)[..., None]
    s = np.asarray(total, np.float64)[..., None]
    return special.logsumexp(theta * s - n * log_m, axis=-1) - math.log(DUAL_GRID)


@dataclass(frozen=True)
class KeyState:
    """One key's evidence so far (names only, never a value)."""

    name: str | None
    num_scored_tokens: int
    score: float
    log10_e_value: float


@dataclass(frozen=True)
class StreamState:
    num_tokens: int
    num_scored_tokens: int  # of the key with the most evidence
    log10_e_value: float  # the family's e-process now (average over keys)
    log10_p_anytime: float  # -log10 of the largest family e-value so far, capped at 0
    is_watermarked: bool  # the e-process reached 1 / threshold at some point (stays True)
    best: int | None  # index of the key with the most evidence now
    keys: tuple[KeyState, ...]

    @property
    def e_value(self) -> float:
        return math.inf if self.log10_e_value > 308 else 10.0**self.log10_e_value

    @property
    def p_anytime(self) -> float:
        return 10.0**self.log10_p_anytime


class _KeyTrack:
    """Running count, sum and log e-value of one key's de-duplicated scores."""

    def __init__(self, config: KeyConfig) -> None:
        self.config = config
        self.n = 0
        self.total = 0.0
        self.log_e_now = 0.0
        dual = config.algorithm == "dual_key_gumbel"
        self._keys = (
            (prf.derive_key(config.key, b"key_a"), prf.derive_key(config.key, b"key_b"))
            if dual
            else (config.key,)
        )

    def log_e(self, n: ArrayLike, total: ArrayLike) -> NDArray[np.float64]:
        if self.config.algorithm == "dual_key_gumbel":
            return log_e_dual(n, total, self.config.alpha)
        return log_e_gumbel(n, total)

    def score_one(self, context: tuple[int, ...], token: int) -> float:
        """The score of one fresh position (scalar PRF: numpy's overhead dominates one row)."""
        s = [-math.log1p(-prf.uniform_of_word(prf.word(k, context, token))) for k in self._keys]
        return s[0] if len(s) == 1 else (1.0 - self.config.alpha) * s[0] + self.config.alpha * s[1]

    def advance_one(self, score: float | None) -> float:
        if score is not None:
            self.n += 1
            self.total += score
            self.log_e_now = _log_e_scalar(self, self.n, self.total)
        return self.log_e_now


def _log_e_scalar(track: _KeyTrack, n: int, total: float) -> float:
    if track.config.algorithm == "gumbel" and total > 0.0:
        lower = float(special.gammainc(n + 1.0, total))
        if lower > 0.0:
            return total + math.lgamma(n + 1.0) + math.log(lower) - (n + 1.0) * math.log(total)
    return float(track.log_e(n, total))


def _log_mean_exp(values: Sequence[float]) -> float:
    top = max(values)
    if len(values) == 1 or top == -math.inf:
        return top
    return top + math.log(sum(math.exp(v - top) for v in values) / len(values))


def flag_line_log10(threshold: float) -> float:
    """log10 of the anytime p-value at or under which a stream is flagged: the e-process has
    reached ``1 / threshold`` (the meter's line)."""
    return math.log10(threshold)


class EvidenceStream:
    """Feed token ids as they are generated; ``extend`` returns the state after them.

    Every appended position is checked (a batch append checks each prefix), so appending one
    token at a time or many at once gives the same state. Work per token: one set lookup per
    context width and one PRF evaluation per key, plus O(1) arithmetic.
    """

    def __init__(
        self,
        key: int | KeyConfig | Sequence[int | KeyConfig],
        *,
        threshold: float = DEFAULT_THRESHOLD,
    ) -> None:
        if not 0.0 < threshold < 1.0:
            raise ValueError("threshold must lie in (0, 1)")
        keys = [key] if isinstance(key, (int, KeyConfig)) else list(key)
        if not keys:
            raise ValueError("at least one key is needed")
        self.threshold = threshold
        self._tracks = [_KeyTrack(as_key_config(k)) for k in keys]
        self._width = max(t.config.context_width for t in self._tracks)
        self._tail: list[int] = [PAD] * self._width  # the last ``_width`` tokens, -1 padded
        # Contexts seen so far per width, each as its ``w`` little-endian uint32 values packed
        # in bytes (-1 wraps as at generation): the persisted form is the same bytes, so a
        # stored stream loads with one numpy view instead of a tuple per context (at 20,000
        # tokens 10x less time per HTTP append than tuples; benchmarks/bench_stream.py).
        self._seen: dict[int, set[bytes]] = {t.config.context_width: set() for t in self._tracks}
        self._pack = {w: struct.Struct(f"<{w}I").pack for w in self._seen}
        self._num_tokens = 0
        self._max_log_e = 0.0  # E starts at 1
        self._log_e_now = 0.0

    def __repr__(self) -> str:  # the configs hold key values
        return f"<EvidenceStream keys={len(self._tracks)} tokens={self._num_tokens}>"

    @property
    def num_tokens(self) -> int:
        return self._num_tokens

    def extend(self, token_ids: ArrayLike) -> StreamState:
        ids = as_token_array(token_ids)
        if ids.size == 1:
            self._append_one(int(ids[0]))
        elif ids.size:
            self._append(ids)
        return self.state()

    def _append_one(self, token: int) -> None:
        fresh: dict[int, tuple[int, ...] | None] = {}
        for w, seen in self._seen.items():
            context = tuple(t & 0xFFFFFFFF for t in self._tail[self._width - w :])
            packed = self._pack[w](*context)
            fresh[w] = None if packed in seen else context
            seen.add(packed)
        per_key = []
        for track in self._tracks:
            new = fresh[track.config.context_width]
            score = None if new is None else track.score_one(new, token)
            per_key.append(track.advance_one(score))
        self._log_e_now = _log_mean_exp(per_key)
        self._max_log_e = max(self._max_log_e, self._log_e_now)
        self._num_tokens += 1
        self._tail = self._tail[1:] + [token]

    def _append(self, ids: NDArray[np.int64]) -> None:
        padded = np.concatenate([np.asarray(self._tail, np.int64), ids])
        fresh = {w: self._fresh(padded, ids.size, w) for w in self._seen}
        per_key = [self._key_path(t, ids, *fresh[t.config.context_width]) for t in self._tracks]
        stacked = np.stack(per_key)
        family = special.logsumexp(stacked, axis=0) - math.log(len(self._tracks))
        self._max_log_e = max(self._max_log_e, float(family.max()))
        self._log_e_now = float(family[-1])
        self._num_tokens += int(ids.size)
        self._tail = [int(i) for i in padded[-self._width :]]

    def _fresh(self, padded: NDArray, count: int, w: int) -> tuple[NDArray, NDArray[np.bool_]]:
        """Contexts ``[count, w]`` of the appended positions and which of them are new."""
        windows = np.lib.stride_tricks.sliding_window_view(padded[self._width - w :], w)[:count]
        # -1 wraps as at generation; one bytes object per row, as in ``_seen``
        rows = np.ascontiguousarray(windows.astype("<u4")).view(f"V{4 * w}").ravel().tolist()
        seen = self._seen[w]
        fresh = np.zeros(count, np.bool_)
        for i, context in enumerate(rows):
            if context not in seen:
                seen.add(context)
                fresh[i] = True
        return windows, fresh

    def _key_path(
        self, track: _KeyTrack, ids: NDArray, windows: NDArray, fresh: NDArray
    ) -> NDArray:
        """log E of ``track`` after each appended position (and advance its counters)."""
        scores = np.zeros(ids.size, np.float64)
        if fresh.any():
            scores[fresh] = scoring.config_scores(track.config, windows[fresh], ids[fresh])
        n = track.n + np.cumsum(fresh)
        total = track.total + np.cumsum(scores)
        path = track.log_e(n, total)
        track.n, track.total, track.log_e_now = int(n[-1]), float(total[-1]), float(path[-1])
        return path

    def state(self) -> StreamState:
        keys = tuple(
            KeyState(
                name=t.config.name,
                num_scored_tokens=t.n,
                score=t.total,
                log10_e_value=t.log_e_now * _LOG10E,
            )
            for t in self._tracks
        )
        best = max(range(len(keys)), key=lambda i: keys[i].log10_e_value)
        log10_p = min(0.0, -self._max_log_e * _LOG10E)
        return StreamState(
            num_tokens=self._num_tokens,
            num_scored_tokens=keys[best].num_scored_tokens,
            log10_e_value=self._log_e_now * _LOG10E,
            log10_p_anytime=log10_p,
            is_watermarked=log10_p <= flag_line_log10(self.threshold),
            best=best,
            keys=keys,
        )

    # --- persistence (the web keeps a stream between HTTP requests) -------------------

    def to_bytes(self) -> bytes:
        """Counters, tail and seen contexts; no key value (``from_bytes`` takes the keys)."""
        header = {
            "v": 1,
            "num_tokens": self._num_tokens,
            "tail": self._tail,
            "max_log_e": self._max_log_e,
            "log_e_now": self._log_e_now,
            "tracks": [[t.n, t.total, t.log_e_now] for t in self._tracks],
            "seen": {str(w): len(s) for w, s in self._seen.items()},
        }
        head = json.dumps(header).encode()
        blobs = b"".join(b"".join(self._seen[w]) for w in sorted(self._seen))
        return len(head).to_bytes(4, "big") + head + blobs

    @classmethod
    def from_bytes(
        cls,
        data: bytes,
        key: int | KeyConfig | Sequence[int | KeyConfig],
        *,
        threshold: float = DEFAULT_THRESHOLD,
    ) -> EvidenceStream:
        stream = cls(key, threshold=threshold)
        size = int.from_bytes(data[:4], "big")
        header = json.loads(data[4 : 4 + size])
        if header.get("v") != 1 or len(header["tracks"]) != len(stream._tracks):
            raise ValueError("the stored stream does not match these keys")
        stream._num_tokens = int(header["num_tokens"])
        stream._tail = [int(t) for t in header["tail"]]
        stream._max_log_e = float(header["max_log_e"])
        stream._log_e_now = float(header["log_e_now"])
        for track, (n, total, log_e) in zip(stream._tracks, header["tracks"], strict=True):
            track.n, track.total, track.log_e_now = int(n), float(total), float(log_e)
        offset = 4 + size
        for w in sorted(stream._seen):
            count = int(header["seen"][str(w)])
            rows = np.frombuffer(data, f"V{4 * w}", count, offset)
            stream._seen[w] = set(rows.tolist())
            offset += count * w * 4
        return stream


def split_stable(tokenizer: Any, pending: str, *, final: bool) -> tuple[list[int], str]:
    """Tokens of streamed text that later text cannot change, and the text still pending.

    The last word may still grow ("hel" + "lo" is one token, "hel" alone two), so the text
    from the last token that starts with whitespace stays pending until more text arrives or
    the stream is ``final``. Byte-level BPE pre-tokenizers (SmolLM2's) never merge across such
    a boundary, so the committed tokens are those of the whole text. Only the pending tail is
    tokenized again: the work per delta does not grow with the stream.
    """
    if not pending:
        return [], ""
    ids, offsets = tokenizer.encode_with_offsets(pending)
    if final:
        return [int(i) for i in ids], ""
    starts = [int(o[0]) for o in offsets]
    for i in range(len(ids) - 1, 0, -1):
        if pending[starts[i]].isspace() and not pending[starts[i] - 1].isspace():
            return [int(t) for t in ids[:i]], pending[starts[i] :]
    return [], pending
