"""Watermark key configurations (upstream ``WatermarkConfig`` names, detection side)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from detector.prf import check_key

Algorithm = Literal["gumbel", "dual_key_gumbel"]
ALGORITHMS: tuple[str, ...] = ("gumbel", "dual_key_gumbel")


@dataclass(frozen=True)
class KeyConfig:
    """One key to test. ``repr`` and ``str`` never show the key value."""

    key: int = field(repr=False)
    algorithm: Algorithm = "gumbel"
    context_width: int = 4
    alpha: float = 0.1
    deduplicate: bool = True
    name: str | None = None
    max_history: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", check_key(self.key))
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {self.algorithm!r}; expected one of {ALGORITHMS}")
        if isinstance(self.context_width, bool) or not isinstance(self.context_width, int):
            raise ValueError("context_width must be an integer")
        if not 1 <= self.context_width <= 1024:
            raise ValueError("context_width must lie in [1, 1024]")
        if not 0.0 <= float(self.alpha) <= 1.0:
            raise ValueError("alpha must lie in [0, 1]")
        if self.max_history is not None and self.max_history < 1:
            raise ValueError("max_history must be positive or None")

    @classmethod
    def from_vllm(cls, config: dict[str, Any], name: str | None = None) -> KeyConfig:
        """Build from vLLM's JSON shape (``{"algorithm": "gumbel", "key": 42, ...}``)."""
        if "key" not in config:
            raise ValueError("a watermark configuration needs a key")
        dedup = config.get("deduplicate_contexts", True)
        return cls(
            key=config["key"],
            algorithm=config.get("algorithm", "gumbel"),
            context_width=int(config.get("context_width", 4)),
            alpha=float(config.get("alpha", 0.1)),
            deduplicate=dedup not in (False, "none"),
            name=name,
        )


def as_key_config(key: int | KeyConfig) -> KeyConfig:
    return key if isinstance(key, KeyConfig) else KeyConfig(key=key)
