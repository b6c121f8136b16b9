"""The one model of a watermark key: upstream vLLM's ``WatermarkConfig`` plus a name.

Everything that describes a key lives here and nowhere else: its fields and their limits,
how a typed key value is parsed, the signed-int64 view the kernels take, and vLLM's JSON
shape (``{"key": 42, "algorithm": "gumbel", ...}``). The generator's key file, the registry
and the detector all build a :class:`KeyConfig`; none restates a field or a limit.

Detection reads two of the generation settings (docs/spec.md §3): with
``deduplicate_contexts != "none"`` only the first occurrence of each context is scored, and
``deduplicate_contexts_max_history`` bounds how far back that search looks, as the
generator's did (None: the whole text). A bare key (:func:`as_key_config`, the CLI,
``detect_ids``) searches the whole text, as docs/spec.md §3.3 says: skipping a repeat that
the generator keyed only drops evidence, while scoring a repeat twice on human text would
break the Gamma null. Messages never contain a key value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from detector.core.prf import check_key

Algorithm = Literal["gumbel", "dual_key_gumbel"]
DedupScope = Literal["single_turn", "all", "none"]
ALGORITHMS: tuple[str, ...] = ("gumbel", "dual_key_gumbel")
DEDUP_SCOPES: tuple[str, ...] = ("single_turn", "all", "none")
PRFS: tuple[str, ...] = ("philox",)  # the only PRF upstream ships
# Contexts wider than this are refused everywhere (registry, key file, detector): the Triton
# kernels unroll one Philox call per 4 context tokens, and a context this wide already
# leaves almost no repeated contexts to de-duplicate.
MAX_CONTEXT_WIDTH = 64
DEFAULT_MAX_HISTORY = 8192  # upstream's deduplicate_contexts_max_history
# The family-wise level a verdict is decided at, everywhere unless a caller or a setting says
# otherwise; the power figures (``tokens_needed``) refer to it.
DEFAULT_THRESHOLD = 0.01
# A new key's settings unless its creator says otherwise: upstream ``WatermarkConfig``'s.
DEFAULT_ALGORITHM: Algorithm = "gumbel"
DEFAULT_ALPHA = 0.1
DEFAULT_CONTEXT_WIDTH = 4
_KEY_LITERAL = re.compile(r"-?(?:[0-9]+|0[xX][0-9a-fA-F]+)")  # a sign only to say "out of range"


def parse_key(value: str | int) -> int:
    """A key typed by a person or read from a file: a decimal or ``0x``-hex literal (surrounding
    whitespace ignored), or an int, in [0, 2**64). ValueError otherwise; never echoes it."""
    if isinstance(value, str):
        text = value.strip()
        if not _KEY_LITERAL.fullmatch(text):
            raise ValueError("a watermark key must be a decimal or 0x-hex integer")
        value = int(text, 16 if "x" in text.lower() else 10)
    return check_key(value)


def key_int64(key: int) -> int:
    """The signed int64 holding the same 64 bits as ``key`` (what the kernels' key tensors take):
    a key >= 2**63 travels as ``key - 2**64``."""
    return int.from_bytes(check_key(key).to_bytes(8, "little"), "little", signed=True)


def _check_int(name: str, value: object, low: int, high: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer")
    if value < low or (high is not None and value > high):
        raise ValueError(f"{name} must lie in [{low}, {high if high is not None else 'inf'}]")


@dataclass(frozen=True)
class KeyConfig:
    """One key: upstream ``WatermarkConfig`` (same names, same defaults) and a name.

    ``repr`` and ``str`` never show the key value. Invalid fields raise ValueError.
    """

    key: int = field(repr=False)
    algorithm: Algorithm = DEFAULT_ALGORITHM
    alpha: float = DEFAULT_ALPHA
    context_width: int = DEFAULT_CONTEXT_WIDTH
    deduplicate_contexts: DedupScope = "single_turn"
    deduplicate_contexts_max_history: int | None = DEFAULT_MAX_HISTORY
    prf: str = "philox"
    allow_target_only_watermarking: bool = False
    # vLLM >= 0.34: upstream's server overrides requests' ``watermarking: false``. Generation
    # only: detection reads nothing of it (docs/generator.md says how it sits beside the gate).
    enforce: bool = False
    name: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", check_key(self.key))
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)):
            raise ValueError("alpha must be a number")
        if not 0.0 <= float(self.alpha) <= 1.0:
            raise ValueError("alpha must lie in [0, 1]")
        object.__setattr__(self, "alpha", float(self.alpha))
        _check_int("context_width", self.context_width, 1, MAX_CONTEXT_WIDTH)
        if self.deduplicate_contexts not in DEDUP_SCOPES:
            raise ValueError(f"deduplicate_contexts must be one of {DEDUP_SCOPES}")
        if self.deduplicate_contexts_max_history is not None:
            _check_int("deduplicate_contexts_max_history", self.deduplicate_contexts_max_history, 1)
        if self.prf not in PRFS:
            raise ValueError(f"prf must be one of {PRFS}")
        if not isinstance(self.allow_target_only_watermarking, bool):
            raise ValueError("allow_target_only_watermarking must be true or false")
        if not isinstance(self.enforce, bool):
            raise ValueError("enforce must be true or false")

    @property
    def deduplicate(self) -> bool:
        """Whether repeated contexts are skipped (at generation and at detection)."""
        return self.deduplicate_contexts != "none"

    @property
    def max_history(self) -> int | None:
        """How many earlier positions the repeated-context search covers (None: all)."""
        return self.deduplicate_contexts_max_history

    @property
    def key_int64(self) -> int:
        return key_int64(self.key)

    @classmethod
    def from_vllm(
        cls,
        config: Mapping[str, Any],
        name: str | None = None,
        base_dir: str | os.PathLike[str] | None = None,
    ) -> KeyConfig:
        """Parse vLLM's JSON shape; absent fields take upstream's defaults, unknown ones are
        refused, the key must be a JSON integer (as upstream's) or come from ``key_file``
        (vLLM's next ``WatermarkConfig.key_file``: a file holding the key as a decimal
        integer, read now; a relative path is taken from ``base_dir``, else the working
        directory). One of the two, never both."""
        where = name or "the configuration"
        if not isinstance(config, Mapping):
            raise ValueError(f"{where} must be a JSON object")
        unknown = sorted(set(config) - set(INPUT_FIELDS))
        if unknown:
            raise ValueError(f"unknown watermark field(s) {unknown} in {where}")
        values = dict(config)
        if "key_file" in values:
            if "key" in values:
                raise ValueError(f"{where} gives both key and key_file: give one")
            values["key"] = read_key_file(values.pop("key_file"), base_dir, where)
        if "key" not in values:
            raise ValueError(f"{where} has no key")
        return cls(**values, name=name)

    def to_vllm(self) -> dict[str, Any]:
        """vLLM's JSON shape with every field (holds the key value: a key file's entry)."""
        data = asdict(self)
        return {name: data[name] for name in VLLM_FIELDS}


VLLM_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(KeyConfig) if f.name != "name")
# What a configuration may say: vLLM 0.34's fields, and vLLM main's ``key_file``, which names
# where the key is rather than being part of the key (``from_vllm`` reads it into ``key``).
KEY_FILE_FIELD = "key_file"
INPUT_FIELDS: tuple[str, ...] = (*VLLM_FIELDS, KEY_FILE_FIELD)
_DECIMAL_KEY = re.compile(r"[0-9]+")
MAX_KEY_FILE_BYTES = 4096


def read_key_file(
    path: object, base_dir: str | os.PathLike[str] | None = None, where: str = "the configuration"
) -> int:
    """The key a ``key_file`` holds: one decimal integer in [0, 2**64), surrounding whitespace
    ignored (ValueError otherwise; the message names the file, never its content)."""
    if not isinstance(path, str) or not path:
        raise ValueError(f"{where}: key_file must be a path")
    target = Path(path)
    if not target.is_absolute() and base_dir is not None:
        target = Path(base_dir) / target
    try:
        with open(target, "rb") as handle:
            data = handle.read(MAX_KEY_FILE_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"{where}: cannot read key_file {target}: {exc.strerror}") from None
    try:
        text = data.decode("ascii").strip()
    except UnicodeDecodeError:
        text = ""
    if len(data) > MAX_KEY_FILE_BYTES or not _DECIMAL_KEY.fullmatch(text):
        raise ValueError(f"{where}: key_file {target} must hold one decimal integer")
    try:
        return check_key(int(text))
    except ValueError:
        raise ValueError(f"{where}: the key in key_file {target} must lie in [0, 2**64)") from None


def as_key_config(key: int | KeyConfig) -> KeyConfig:
    """A configuration as given, or a bare key's (upstream defaults, whole-text search)."""
    return (
        key if isinstance(key, KeyConfig) else KeyConfig(key, deduplicate_contexts_max_history=None)
    )
