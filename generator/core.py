"""The sampler core shared by every backend: per-request keys, logits processing, keyed draw.

A backend hands the core one ``[batch, vocab]`` logits tensor and one :class:`RowState` per row
(or ``None`` for a row it must leave alone). The core processes the watermarked rows exactly as
a sampler would (penalties, temperature, min-p, top-k/top-p; see the spec, section 2), builds
each row's context from its generated tokens, decides which rows carry the keyed draw
(de-duplication, dual-key routing) and calls ``kernels.gumbel_sample`` once per context width.
The backends then force the chosen token (:func:`force_tokens`), so any downstream sampler
must pick it. A row built with ``record=True`` keeps a :class:`DrawRecord` of what the draw
did (positions with a choice, the expected excess score), from which a server states whether
the reply carries a watermark and how much evidence a detector is expected to find.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from detector.core.config import KeyConfig, key_int64
from detector.core.prf import derive_key
from detector.core.sampling import top_k_top_p_mask
from detector.core.stats import gamma_upper_log10
from generator.config import KeyStore

log = logging.getLogger(__name__)

SAMPLING_EPS = 1e-5  # below this temperature vLLM samples greedily; so do we
KEY_ARG = "watermark_key"
OPT_OUT_ARG = "watermarking"
_SUBKEY_DOMAINS = (b"key_a", b"key_b")
# A keyed position has a choice when the key moves the token off the most likely one with at
# least this probability (a temperature of 1e-4 leaves about e^-100 on most positions).
CHOICE_EPS = 1e-6


class WatermarkRequestError(ValueError):
    """A request asks for a watermark the generator cannot give it (bad or unknown key name)."""


@dataclass(frozen=True)
class SamplingSettings:
    """The per-request sampling parameters the core applies before the keyed draw."""

    temperature: float = 1.0
    top_k: int = 0  # 0 or -1: off
    top_p: float = 1.0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0

    @property
    def greedy(self) -> bool:
        return self.temperature < SAMPLING_EPS

    @property
    def has_penalties(self) -> bool:
        return (
            self.repetition_penalty != 1.0
            or self.frequency_penalty != 0.0
            or self.presence_penalty != 0.0
        )

    @classmethod
    def from_params(cls, params: Any) -> SamplingSettings:
        """From anything with vLLM ``SamplingParams`` attribute names."""
        names = cls.__dataclass_fields__
        return cls(**{n: getattr(params, n) for n in names if getattr(params, n, None) is not None})


def resolve_settings(
    extra_args: Mapping[str, Any] | None,
    sampling: SamplingSettings,
    store: KeyStore | None,
    default_key: str | None = None,
) -> tuple[str | None, KeyConfig | None]:
    """Which key (name, settings) watermarks a request; ``(name, None)`` when it is not watermarked.

    ``extra_args`` is vLLM's per-request ``extra_args`` (``vllm_xargs`` over HTTP):
    ``{"watermark_key": NAME}`` selects a key, ``{"watermarking": false}`` opts out. Without a
    name the store's default applies; a request with neither is refused rather than silently
    left unwatermarked.
    """
    args = dict(extra_args or {})
    opt = args.get(OPT_OUT_ARG, True)
    if opt not in (True, False, "true", "false"):
        raise WatermarkRequestError("'watermarking' must be true or false")
    if opt in (False, "false"):
        return None, None
    if KEY_ARG in args and not (isinstance(args[KEY_ARG], str) and args[KEY_ARG]):
        # An explicit null or empty name never falls back to the default key.
        raise WatermarkRequestError(f"{KEY_ARG!r} must be a key name (a non-empty string)")
    name = args.get(KEY_ARG, default_key)
    if name is None:
        raise WatermarkRequestError(f"no watermark key selected: pass {KEY_ARG!r} or opt out")
    if not isinstance(name, str):
        raise WatermarkRequestError(f"{KEY_ARG!r} must be a key name (a string)")
    if store is None or name not in store:
        raise WatermarkRequestError(f"unknown watermark key name {name!r}")
    if sampling.greedy:
        log.warning(
            "greedy request (temperature 0) with key %r: served greedily, unwatermarked", name
        )
        return name, None
    return name, store[name]


@dataclass
class DrawRecord:
    """What the keyed draw did for one reply, position by position.

    ``keyed``: positions drawn with the key (the context did not repeat); ``with_choice``: of
    those, positions where the most likely token had probability at most ``1 - CHOICE_EPS``
    (so the key could change the token); ``excess``: the sum over the keyed
    positions of ``E[s] - 1`` at the sampling distribution, the score a detector expects above
    chance (``detector.reading.model.expected_score_of``).
    """

    keyed: int = 0
    with_choice: int = 0
    excess: float = 0.0

    @property
    def watermarked(self) -> bool:
        """Whether the reply carries any watermark: the key chose among candidates somewhere."""
        return self.with_choice > 0

    def expected_log10_p(self) -> float:
        """log10 of the p-value a detector reaches at the expected score of the keyed tokens:
        the Gamma(n, 1) tail at ``n + excess`` (``detector.core.stats``); 0 with no keyed token."""
        return gamma_upper_log10(self.keyed, self.keyed + self.excess) if self.keyed else 0.0


class RowState:
    """One request's watermark state: its settings, its token history, its own randomness.

    That randomness (a dual key's routing) is drawn fresh for every row, never from the
    request's ``seed``: a seed chosen by the client would fix the routing, and a search over
    seeds offline finds one that routes more tokens to key B, whose score a detector counts
    with weight ``alpha``. The keyed draw itself takes no seed (the PRF reads the key, the
    context and the token only), so a request's ``seed`` changes nothing a watermarked reply
    carries.

    ``output_ids`` may be a live list the backend keeps appending to (vLLM's V1 interface hands
    out such a reference); the state catches up lazily before each draw.
    """

    def __init__(
        self,
        settings: KeyConfig,
        sampling: SamplingSettings,
        prompt_ids: Sequence[int] | None,
        output_ids: list[int],
        key_name: str | None = None,
        *,
        record: bool = False,
        rng: torch.Generator | None = None,
    ) -> None:
        self.settings = settings
        self.sampling = sampling
        self.key_name = key_name
        self.prompt_ids = list(prompt_ids or [])
        self.output_ids = output_ids
        # ``rng``: a test's own generator, for a reproducible routing; never a request's seed.
        if rng is None:
            rng = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
        self.rng = rng
        self._keys = self._subkeys(settings)
        # Filled by keyed_draw when ``record``: a digamma over the vocabulary per step, which
        # the servers that report a reply's expected evidence pay and vLLM's engine does not.
        self.record: DrawRecord | None = DrawRecord() if record else None
        self.record_token: str | None = None  # vLLM: where the record goes (generator.records)
        self._last_seen: dict[tuple[int, ...], int] = {}  # context -> latest history position
        self._history: list[int] = []
        self._scanned = 0  # output tokens folded into _history
        if settings.deduplicate_contexts == "all":
            for token in self.prompt_ids:
                self._push(token)

    @staticmethod
    def _subkeys(settings: KeyConfig) -> tuple[int, ...]:
        if settings.algorithm == "dual_key_gumbel":
            return tuple(derive_key(settings.key, d) for d in _SUBKEY_DOMAINS)
        return (settings.key,)

    def _push(self, token: int) -> None:
        # Record the window *before* this history position, then extend the history.
        self._last_seen[self._window(self._history)] = len(self._history)
        self._history.append(int(token))

    def _window(self, tokens: Sequence[int]) -> tuple[int, ...]:
        w = self.settings.context_width
        tail = list(tokens[-w:]) if tokens else []
        return tuple([-1] * (w - len(tail)) + tail)

    def _catch_up(self) -> None:
        if self.settings.deduplicate_contexts == "none":
            return
        for token in self.output_ids[self._scanned :]:
            self._push(token)
        self._scanned = len(self.output_ids)

    def context(self) -> list[int]:
        """The previous ``w`` generated tokens, left-padded with -1 (prompt tokens never count)."""
        return list(self._window(self.output_ids))

    def repeated(self) -> bool:
        """Whether this step's context already occurred in the searched history."""
        scope = self.settings.deduplicate_contexts
        if scope == "none":
            return False
        self._catch_up()
        if scope == "all" and len(self.output_ids) < self.settings.context_width:
            return True  # partial contexts are never watermarked in "all" scope
        seen = self._last_seen.get(tuple(self.context()))
        if seen is None:
            return False
        limit = self.settings.deduplicate_contexts_max_history
        return limit is None or seen >= len(self._history) - limit

    def draw_key(self) -> int:
        """The key for this step: the key itself, or a routed dual-key sub-key."""
        if len(self._keys) == 1:
            return self._keys[0]
        use_b = torch.rand((), generator=self.rng).item() < float(self.settings.alpha)
        return self._keys[1] if use_b else self._keys[0]


class SampledRow(Protocol):
    """What logits processing reads from a row (RowState, or a backend's unwatermarked row)."""

    sampling: SamplingSettings
    prompt_ids: list[int]
    output_ids: list[int]


def _apply_penalties(logits: torch.Tensor, row: SampledRow) -> None:
    """vLLM's penalties on one row, in place: repetition (prompt + output), then the rest."""
    s = row.sampling
    vocab, dev = logits.shape[-1], logits.device
    out = torch.tensor([t for t in row.output_ids if 0 <= t < vocab], dtype=torch.int64, device=dev)
    if s.repetition_penalty != 1.0:
        seen = torch.zeros(vocab, dtype=torch.bool, device=dev)
        prompt = torch.tensor(
            [t for t in row.prompt_ids if 0 <= t < vocab], dtype=torch.int64, device=dev
        )
        seen[prompt] = True
        seen[out] = True
        scaled = torch.where(
            logits > 0, logits / s.repetition_penalty, logits * s.repetition_penalty
        )
        logits.copy_(torch.where(seen, scaled, logits))
    if s.frequency_penalty or s.presence_penalty:
        counts = torch.bincount(out, minlength=vocab).to(logits.dtype)
        logits -= s.frequency_penalty * counts + s.presence_penalty * (counts > 0).to(logits.dtype)


def process_logits(
    logits: torch.Tensor, rows: Sequence[SampledRow], penalties: bool, *, inplace: bool = False
) -> torch.Tensor:
    """Processed fp32 logits ``[rows, vocab]`` for watermarked rows (NaN counts as -inf).

    ``penalties``: apply repetition/frequency/presence here (vLLM's V1 interface runs custom
    processors before its penalties; Model Runner V2 runs them after, so V2 passes False).
    A copy, unless ``inplace`` and ``logits`` is already fp32: then ``logits`` itself is
    processed (for callers that overwrite the rows afterwards; a [8, 49152] copy into fresh
    memory costs ~0.2 ms here, mostly page faults).
    """
    out = logits.to(torch.float32, copy=not inplace)
    if not bool(out.sum().isfinite()):  # one read instead of a rewrite when all are finite
        out.nan_to_num_(nan=float("-inf"))
    if penalties:
        for i, row in enumerate(rows):
            if row.sampling.has_penalties:
                _apply_penalties(out[i], row)
    dev = out.device
    settings = [r.sampling for r in rows]
    if any(s.temperature != 1.0 for s in settings):
        temps = [s.temperature for s in settings]
        out /= torch.tensor(temps, dtype=torch.float32, device=dev).unsqueeze(1)
    if any(s.min_p > 0 for s in settings):
        min_p = torch.tensor([s.min_p for s in settings], dtype=torch.float32, device=dev)
        probs = out.softmax(dim=-1)
        floor = probs.amax(dim=-1, keepdim=True) * min_p.unsqueeze(1)
        out.masked_fill_(probs < floor, float("-inf"))
    vocab = out.shape[-1]
    if any(0 < s.top_k < vocab or s.top_p < 1 for s in settings):
        top_k = torch.tensor([s.top_k for s in settings], dtype=torch.long, device=dev)
        top_p = torch.tensor([s.top_p for s in settings], dtype=torch.float32, device=dev)
        out = top_k_top_p_mask(out, top_k, top_p)
    return out


def _kernel_sample() -> Any:
    """``kernels.gumbel_sample``: the fused keyed draw (exact pruned CPU path, Triton on GPU)."""
    from kernels.gumbel_sample import gumbel_sample

    return gumbel_sample


def keyed_draw(
    processed: torch.Tensor, rows: Sequence[RowState], generator: torch.Generator | None = None
) -> torch.Tensor:
    """Token ids ``[rows]`` for processed logits: the keyed draw, or ordinary randomness on rows
    whose context repeats. One kernel call per distinct context width."""
    sample = _kernel_sample()
    dev = processed.device
    chosen = torch.empty(len(rows), dtype=torch.int64)
    widths = sorted({r.settings.context_width for r in rows})
    for w in widths:
        idx = [i for i, r in enumerate(rows) if r.settings.context_width == w]
        group = [rows[i] for i in idx]
        keys = torch.tensor([key_int64(r.draw_key()) for r in group], dtype=torch.int64, device=dev)
        contexts = torch.tensor(
            [r.context() for r in group], dtype=torch.int64, device=dev
        )  # [n, w]
        mask = torch.tensor([not r.repeated() for r in group], dtype=torch.bool, device=dev)
        # A CPU generator cannot drive a CUDA draw: the kernel then uses its own randomness.
        gen = generator if generator is None or generator.device == dev else None
        part = processed if len(idx) == len(rows) else processed[idx]  # no copy for one width
        ids = sample(part, keys, contexts, mask, generator=gen)
        chosen[idx] = ids.to(torch.int64).cpu()
        _record(part, group, mask)
    return chosen


def _record(processed: torch.Tensor, rows: Sequence[RowState], mask: torch.Tensor) -> None:
    """Add this step to the DrawRecord of each keyed row that keeps one."""
    picked = [i for i, r in enumerate(rows) if r.record is not None and bool(mask[i])]
    if not picked:
        return
    from detector.reading.model import expected_score_of

    part = processed[torch.tensor(picked, device=processed.device)]
    probs = part.double().softmax(dim=-1)
    choice = ((1.0 - probs.amax(dim=-1)) >= CHOICE_EPS).tolist()
    # Below 1e-300 a probability's reciprocal overflows; its share of E[s] is below 1e-297.
    excess = expected_score_of(probs.masked_fill(probs < 1e-300, 0.0)).tolist()
    for i, chose, e in zip(picked, choice, excess, strict=True):
        record = rows[i].record
        assert record is not None
        record.keyed += 1
        record.with_choice += int(chose)
        record.excess += float(e)


def watermark_step(
    logits: torch.Tensor,
    rows: Sequence[RowState | None],
    *,
    penalties: bool,
    generator: torch.Generator | None = None,
    inplace: bool = False,
) -> torch.Tensor:
    """Chosen token per row ``[batch]`` (int64), -1 for rows left alone (``None``).

    ``inplace``: the caller overwrites every watermarked row afterwards (:func:`force_tokens`),
    so when every row is watermarked the processing may work on ``logits`` itself.
    """
    chosen = torch.full((logits.shape[0],), -1, dtype=torch.int64)
    live = [i for i, r in enumerate(rows) if r is not None]
    if not live:
        return chosen
    states = [rows[i] for i in live]
    assert all(s is not None for s in states)
    if len(live) == logits.shape[0]:
        processed = process_logits(logits, states, penalties, inplace=inplace)  # type: ignore[arg-type]
    else:  # the unwatermarked rows must stay as they are
        picked = logits[torch.tensor(live, device=logits.device)]
        processed = process_logits(picked, states, penalties, inplace=True)  # type: ignore[arg-type]
    chosen[live] = keyed_draw(processed, states, generator)  # type: ignore[arg-type]
    return chosen


def force_tokens(logits: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
    """Leave only the chosen token finite on each row with ``chosen >= 0`` (in place).

    Any later temperature, top-k/top-p or random draw of a stock sampler must then pick it.
    """
    if bool((chosen >= 0).all()):  # every row: one fill and one scatter, no indexing
        logits.fill_(float("-inf"))
        return logits.scatter_(1, chosen.to(logits.device)[:, None], 0.0)
    rows = torch.nonzero(chosen >= 0).squeeze(1)
    if rows.numel() == 0:
        return logits
    cols = chosen[rows].to(logits.device)
    rows = rows.to(logits.device)
    logits[rows] = float("-inf")
    logits[rows, cols] = 0.0
    return logits
