"""What a backend is asked for and what it answers (shared by the CLI, the server, benchmarks)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from generator.core import SamplingSettings


@dataclass(frozen=True)
class GenerationRequest:
    """One prompt to complete. ``messages`` (chat) wins over ``prompt`` when given.

    ``key_name`` selects a key from the backend's key store (None: the store's default);
    ``watermark=False`` opts out.
    """

    prompt: str = ""
    messages: tuple[dict[str, str], ...] | None = None
    max_tokens: int = 64
    sampling: SamplingSettings = field(default_factory=SamplingSettings)
    key_name: str | None = None
    watermark: bool = True
    seed: int | None = None
    ignore_eos: bool = False  # benchmarks: always generate max_tokens

    def __post_init__(self) -> None:
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int):
            raise ValueError("max_tokens must be an integer")
        if not 1 <= self.max_tokens <= 8192:
            raise ValueError("max_tokens must lie in [1, 8192]")
        if self.sampling.temperature < 0:
            raise ValueError("temperature must be >= 0")
        if not 0 < self.sampling.top_p <= 1:
            raise ValueError("top_p must lie in (0, 1]")

    def extra_args(self) -> dict[str, Any]:
        """vLLM's per-request ``extra_args`` selecting the key (``vllm_xargs`` over HTTP)."""
        if not self.watermark:
            return {"watermarking": False}
        return {} if self.key_name is None else {"watermark_key": self.key_name}


@dataclass(frozen=True)
class Generation:
    """A completion and its provenance: which key (by name), model and tokenizer made it."""

    text: str
    token_ids: tuple[int, ...]
    prompt_token_ids: tuple[int, ...]
    key_name: str | None  # None: not watermarked
    watermarked: bool  # the keyed draw chose among candidates at some position
    model: str
    tokenizer_hash: str
    finish_reason: str  # "stop" or "length"
    # log10 p a detector reaches at the reply's expected score (DrawRecord); None: not measured
    expected_log10_p: float | None = None

    def provenance(self) -> dict[str, Any]:
        return {
            "key": self.key_name,
            "watermarked": self.watermarked,
            "model": self.model,
            "tokenizer_hash": self.tokenizer_hash,
            "expected_log10_p": self.expected_log10_p,
        }
