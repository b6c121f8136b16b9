"""The transformers backend: the same sampler core driving a Hugging Face causal LM on CPU.

For machines without vLLM. Batched decoding with a KV cache and left padding; every row goes
through :func:`generator.core.watermark_step`, rows that are not watermarked (opt-out, greedy)
through the same logits processing and an ordinary draw. Each reply states what the keyed
draw did (``generator.core.DrawRecord``): ``watermarked`` only where the key chose among
candidates, and the log10 p a detector is expected to reach.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from generator.config import KeyStore
from generator.core import (
    RowState,
    SamplingSettings,
    process_logits,
    resolve_settings,
    watermark_step,
)
from generator.types import Generation, GenerationRequest


@dataclass
class _Plain:
    """Duck-typed row for unwatermarked sampling (process_logits reads only these)."""

    sampling: SamplingSettings
    prompt_ids: list[int]
    output_ids: list[int]


class TransformersBackend:
    """Generate with a local HF model directory (default: the embedded SmolLM2)."""

    name = "transformers"

    def __init__(
        self,
        store: KeyStore | None,
        model: str | None = None,
        default_key: str | None = None,
        watermark_enabled: bool = True,
    ) -> None:
        from detector.text.tokenizers import load_tokenizer
        from generator.models import load_hf_model

        self.store = store
        self.default_key = default_key
        self.watermark_enabled = watermark_enabled  # False: benchmarks' "watermark off" arm
        self.model, self.tokenizer, path = load_hf_model(model)
        self.model_name = path.name
        self.tokenizer_hash = load_tokenizer(str(path)).content_hash
        self.eos_ids = self._eos_ids()
        self.lock = threading.Lock()  # one forward pass at a time: the model is not re-entrant
        self.generator = torch.Generator().manual_seed(torch.seed())
        from kernels.cpu_scan import warm_up

        warm_up()  # compile the CPU draw at start-up, not on the first request

    def _eos_ids(self) -> set[int]:
        ids = {
            self.tokenizer.eos_token_id,
            getattr(self.model.generation_config, "eos_token_id", None),
        }
        flat: set[int] = set()
        for i in ids:
            flat.update(i if isinstance(i, list) else [i] if i is not None else [])
        return flat

    def encode_prompt(self, request: GenerationRequest) -> list[int]:
        if request.messages is not None:
            ids = self.tokenizer.apply_chat_template(
                list(request.messages), add_generation_prompt=True, tokenize=True, return_dict=False
            )
            return [int(i) for i in (ids["input_ids"] if isinstance(ids, dict) else ids)]
        return [
            int(i) for i in self.tokenizer(request.prompt, add_special_tokens=False)["input_ids"]
        ]

    def _row(
        self, request: GenerationRequest, prompt: list[int], output: list[int]
    ) -> tuple[str | None, Any]:
        """(key name, row): a RowState when watermarked, else a plain row."""
        if self.watermark_enabled:
            name, settings = resolve_settings(
                request.extra_args(), request.sampling, self.store, self.default_key
            )
            if settings is not None:
                return name, RowState(settings, request.sampling, prompt, output, name, record=True)
        return None, _Plain(request.sampling, prompt, output)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Complete a batch of requests together."""
        outputs: list[Generation] = []
        for step in self._decode(requests):
            outputs = step
        return outputs

    def stream(self, request: GenerationRequest) -> Iterator[Generation]:
        """The growing completion of one request, one token at a time."""
        for step in self._decode([request]):
            yield step[0]

    def _decode(self, requests: Sequence[GenerationRequest]) -> Iterator[list[Generation]]:
        if self.store is not None:
            self.store = self.store.refreshed()  # a rewritten key file applies without restart
        prompts = [self.encode_prompt(r) for r in requests]
        outs: list[list[int]] = [[] for _ in requests]
        rows = [self._row(r, p, o) for r, p, o in zip(requests, prompts, outs, strict=True)]
        done = [False] * len(requests)
        with self.lock, torch.inference_mode():
            state = _Batch(self.model, prompts)
            for _ in range(max(r.max_tokens for r in requests)):
                logits = state.next_logits()  # [batch, vocab]
                tokens = self._sample(logits, [row for _, row in rows])
                for i, token in enumerate(tokens.tolist()):
                    if not done[i]:
                        outs[i].append(token)
                        done[i] = self._finished(requests[i], token, len(outs[i]))
                yield self._results(requests, prompts, outs, rows, done)
                if all(done):
                    break
                state.feed(tokens)

    def _finished(self, request: GenerationRequest, token: int, n: int) -> bool:
        return n >= request.max_tokens or (not request.ignore_eos and token in self.eos_ids)

    def _sample(self, logits: torch.Tensor, rows: list[Any]) -> torch.Tensor:
        keyed = [r if isinstance(r, RowState) else None for r in rows]
        # In place: a batch of keyed rows only is not read again; a mixed one is copied inside.
        chosen = watermark_step(
            logits, keyed, penalties=True, generator=self.generator, inplace=True
        )
        plain = [i for i, r in enumerate(rows) if not isinstance(r, RowState)]
        if plain:
            chosen[plain] = self._plain_sample(logits[plain], [rows[i] for i in plain])
        return chosen

    def _plain_sample(self, logits: torch.Tensor, rows: list[_Plain]) -> torch.Tensor:
        processed = process_logits(
            logits,
            [_Plain(_nonzero_t(r.sampling), r.prompt_ids, r.output_ids) for r in rows],
            penalties=True,
            inplace=True,  # logits[plain] is already a copy
        )
        sampled = torch.multinomial(processed.softmax(-1), 1, generator=self.generator).squeeze(1)
        greedy = torch.tensor([r.sampling.greedy for r in rows])
        return torch.where(greedy, processed.argmax(-1), sampled)

    def _results(
        self,
        requests: Sequence[GenerationRequest],
        prompts: list[list[int]],
        outs: list[list[int]],
        rows: list[tuple[str | None, Any]],
        done: list[bool],
    ) -> list[Generation]:
        results = []
        for req, prompt, out, (name, row), fin in zip(
            requests, prompts, outs, rows, done, strict=True
        ):
            stopped = bool(out) and out[-1] in self.eos_ids and not req.ignore_eos
            text_ids = out[:-1] if stopped else out
            record = row.record if isinstance(row, RowState) else None
            marked = record is not None and record.watermarked
            results.append(
                Generation(
                    text=self.tokenizer.decode(text_ids, skip_special_tokens=True),
                    token_ids=tuple(out),
                    prompt_token_ids=tuple(prompt),
                    key_name=name if marked else None,
                    watermarked=marked,
                    expected_log10_p=record.expected_log10_p() if record is not None else 0.0,
                    model=self.model_name,
                    tokenizer_hash=self.tokenizer_hash,
                    finish_reason=("stop" if stopped else "length") if fin else "",
                )
            )
        return results


def _nonzero_t(s: SamplingSettings) -> SamplingSettings:
    # Greedy rows take the argmax of the unscaled logits; keep the division finite.
    if not s.greedy:
        return s
    return SamplingSettings(
        1.0,
        s.top_k,
        s.top_p,
        s.min_p,
        s.repetition_penalty,
        s.frequency_penalty,
        s.presence_penalty,
    )


class _Batch:
    """Left-padded batch state over a KV cache: feed tokens, read the next logits."""

    def __init__(self, model: Any, prompts: list[list[int]]) -> None:
        self.model = model
        width = max(len(p) for p in prompts)
        pad = 0
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], dtype=torch.long)
        self.mask = torch.tensor(
            [[0] * (width - len(p)) + [1] * len(p) for p in prompts], dtype=torch.long
        )
        self.cache: Any = None
        self.pending = ids  # [batch, t] tokens not yet fed

    def next_logits(self) -> torch.Tensor:
        fed = self.pending.shape[1]
        positions = (self.mask.cumsum(-1) - 1).clamp_min(0)[:, -fed:]
        out = self.model(
            input_ids=self.pending,
            attention_mask=self.mask,
            position_ids=positions,
            past_key_values=self.cache,
            use_cache=True,
        )
        self.cache = out.past_key_values
        return out.logits[:, -1, :].float()

    def feed(self, tokens: torch.Tensor) -> None:
        self.pending = tokens.view(-1, 1).to(torch.long)
        self.mask = torch.cat([self.mask, torch.ones_like(self.pending)], dim=1)
