"""Watermark settings in vLLM's JSON shape, and the per-request key store.

A key file is JSON: ``{"NAME": {"key": <int>, "algorithm": "gumbel", "context_width": 4, ...}}``
with every field of upstream's ``WatermarkConfig``; a bare upstream config object
(``{"algorithm": "gumbel", "key": 42}``) is one key named ``default``. The file is the only way
keys enter the generator: never the command line, never a request. Key values never appear in
a repr, a log line or an error message; names do.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from detector.config import KeyConfig
from detector.prf import check_key

Algorithm = Literal["gumbel", "dual_key_gumbel"]
DedupScope = Literal["single_turn", "all", "none"]
ALGORITHMS = ("gumbel", "dual_key_gumbel")
DEDUP_SCOPES = ("single_turn", "all", "none")
KEYS_FILE_ENV = "PROVENANCE_KEYS_FILE"
_FIELDS = {
    "key",
    "algorithm",
    "alpha",
    "context_width",
    "deduplicate_contexts",
    "deduplicate_contexts_max_history",
    "prf",
    "allow_target_only_watermarking",
}
log = logging.getLogger(__name__)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


class KeyFileError(ValueError):
    """A key file or watermark configuration is malformed (the message never holds a key)."""


def _check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise KeyFileError(f"{name} must be an integer")
    if value < low or (high is not None and value > high):
        raise KeyFileError(f"{name} must lie in [{low}, {high if high is not None else 'inf'}]")
    return value


@dataclass(frozen=True)
class WatermarkSettings:
    """Upstream ``WatermarkConfig`` (same names, same defaults); ``repr`` hides the key."""

    key: int = field(repr=False)
    algorithm: Algorithm = "gumbel"
    alpha: float = 0.1
    context_width: int = 4
    deduplicate_contexts: DedupScope = "single_turn"
    deduplicate_contexts_max_history: int | None = 8192
    prf: str = "philox"
    allow_target_only_watermarking: bool = False
    name: str | None = None

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "key", check_key(self.key))
        except ValueError as exc:  # check_key's message names no value, but be explicit
            raise KeyFileError(f"key of {self.name or 'this configuration'}: {exc}") from None
        if self.algorithm not in ALGORITHMS:
            raise KeyFileError(f"algorithm must be one of {ALGORITHMS}")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)):
            raise KeyFileError("alpha must be a number")
        if not 0.0 <= float(self.alpha) <= 1.0:
            raise KeyFileError("alpha must lie in [0, 1]")
        _check_int("context_width", self.context_width, 1, 1024)
        if self.deduplicate_contexts not in DEDUP_SCOPES:
            raise KeyFileError(f"deduplicate_contexts must be one of {DEDUP_SCOPES}")
        if self.deduplicate_contexts_max_history is not None:
            _check_int("deduplicate_contexts_max_history", self.deduplicate_contexts_max_history, 1)
        if self.prf != "philox":
            raise KeyFileError("prf must be 'philox' (the only PRF upstream ships)")

    @classmethod
    def from_vllm(cls, config: Mapping[str, Any], name: str | None = None) -> WatermarkSettings:
        """Parse vLLM's JSON shape (``{"algorithm": "gumbel", "key": 42, ...}``)."""
        if not isinstance(config, Mapping):
            raise KeyFileError(f"the configuration of {name or 'a key'} must be a JSON object")
        unknown = sorted(set(config) - _FIELDS)
        if unknown:
            raise KeyFileError(f"unknown watermark field(s) {unknown} in {name or 'configuration'}")
        if "key" not in config:
            raise KeyFileError(f"{name or 'a configuration'} has no key")
        return cls(**dict(config), name=name)

    def key_config(self) -> KeyConfig:
        """The detector's view of this key (detection always de-duplicates contexts)."""
        return KeyConfig(
            key=self.key,
            algorithm=self.algorithm,
            context_width=self.context_width,
            alpha=float(self.alpha),
            deduplicate=True,
            name=self.name,
        )


def _stamp(path: Path) -> tuple[int, int, int]:
    # The inode catches atomic replaces within one timestamp tick; size and mtime, edits.
    st = path.stat()
    return st.st_ino, st.st_mtime_ns, st.st_size


class KeyStore(Mapping[str, WatermarkSettings]):
    """Named watermark settings; the generator looks keys up by name per request."""

    def __init__(self, entries: Mapping[str, WatermarkSettings]) -> None:
        self._entries = dict(entries)
        self._source: Path | None = None  # the key file, when loaded from one
        self._stamp: tuple[int, int, int] | None = None

    def __getitem__(self, name: str) -> WatermarkSettings:
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"unknown watermark key name {name!r}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"KeyStore(names={sorted(self._entries)})"

    @classmethod
    def from_mapping(cls, data: Any) -> KeyStore:
        # ``{}`` is a store with no keys (every key retired): it serves only opted-out requests.
        if not isinstance(data, Mapping):
            raise KeyFileError("a key file must be a JSON object of named configurations")
        if "key" in data and not isinstance(data["key"], Mapping):
            # A bare vLLM ``--watermark-config`` object: one key, named "default".
            return cls({"default": WatermarkSettings.from_vllm(data, name="default")})
        entries = {}
        for name, config in data.items():
            if not isinstance(name, str) or not _NAME.match(name):
                raise KeyFileError(f"invalid key name {name!r}: use letters, digits, '_.:-'")
            entries[name] = WatermarkSettings.from_vllm(config, name=name)
        return cls(entries)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> KeyStore:
        """Load a key file; errors name the file and the key name, never a key value."""
        path = Path(path)
        try:
            stamp = _stamp(path)
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise KeyFileError(f"cannot read key file {path}: {exc.strerror}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            # The decoder's message quotes no document text, only a position.
            raise KeyFileError(f"key file {path} is not valid JSON (line {exc.lineno})") from None
        store = cls.from_mapping(data)
        store._source, store._stamp = path, stamp
        return store

    def refreshed(self) -> KeyStore:
        """This store, or a fresh one when its key file changed (keys added, retired, rotated).

        A running engine calls this as requests arrive, so a rewritten key file takes effect
        without a restart. A file that has become unreadable or malformed keeps the last good
        keys (and logs the file's problem, never a value).
        """
        if self._source is None:
            return self
        try:
            if _stamp(self._source) == self._stamp:
                return self
            return KeyStore.from_file(self._source)
        except (OSError, KeyFileError) as exc:
            log.error("keeping the previous keys: %s", exc)
            return self

    @classmethod
    def from_env(cls) -> KeyStore | None:
        """The store named by ``$PROVENANCE_KEYS_FILE``, or None when it is unset."""
        path = os.environ.get(KEYS_FILE_ENV)
        return cls.from_file(path) if path else None
