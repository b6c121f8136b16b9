"""The generator's key store (named ``detector.core.config.KeyConfig`` entries from a key
file) and its environment: every variable the generator reads is read by the functions at the
end of this module, and no other module of ``generator/`` reads ``os.environ``.

A key file is JSON: ``{"NAME": {"key": <int>, "algorithm": "gumbel", "context_width": 4, ...}}``
with every field of upstream's ``WatermarkConfig``; a bare upstream config object
(``{"algorithm": "gumbel", "key": 42}``) is one key named ``default``. The file is the only way
keys enter the generator: never the command line, never a request, and never a file that its
group or others may write (refused, naming the fix). Key values never appear in a repr, a log
line or an error message; names do. A key name is matched whole (``valid_key_name``); every
log line of the generator shows a value that a client or a file supplied through
``printable``, so no such value can end the line or forge another.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from detector.core.config import KeyConfig

# The generator's variables. The serve command and the embedded runner set them for vLLM's
# process, whose plugins (the logits processors, the gate, the headers) read them there.
KEYS_FILE_ENV = "PROVENANCE_KEYS_FILE"  # the key file (a path)
CLIENTS_FILE_ENV = "PROVENANCE_CLIENTS_FILE"  # the gate's clients file (a path)
ENFORCE_ENV = "PROVENANCE_ENFORCE_WATERMARK"  # "1": every request is watermarked
DEFAULT_KEY_ENV = "PROVENANCE_DEFAULT_KEY"  # the key name of a request that names none
MODEL_ENV = "PROVENANCE_MODEL_NAME"  # the served model's name, in headers and logs
TOKENIZER_ENV = "PROVENANCE_TOKENIZER_HASH"  # the served tokenizer's content hash
MODEL_DIR_ENV = "PROVENANCE_MODEL_DIR"  # else hashed from the model directory's tokenizer
RECORD_DIR_ENV = "PROVENANCE_RECORD_DIR"  # where non-streaming replies' draw records go
# The sampling floors of watermarked requests (generator.floors.SamplingFloors).
MIN_TOP_K_ENV = "PROVENANCE_MIN_TOP_K"
MIN_TEMPERATURE_ENV = "PROVENANCE_MIN_TEMPERATURE"
MIN_TOP_P_ENV = "PROVENANCE_MIN_TOP_P"
MAX_MIN_P_ENV = "PROVENANCE_MAX_MIN_P"
FLOOR_VARIABLES = (MIN_TOP_K_ENV, MIN_TEMPERATURE_ENV, MIN_TOP_P_ENV, MAX_MIN_P_ENV)
# Content Credentials on replies (generator.credentials).
CONTENT_CREDENTIALS_ENV = "PROVENANCE_CONTENT_CREDENTIALS"  # "1": every watermarked reply
C2PA_CERT_ENV = "PROVENANCE_C2PA_CERT"  # the signing certificate chain, PEM (a path)
C2PA_KEY_ENV = "PROVENANCE_C2PA_KEY"  # its private key, PEM (a path, private to the user)
C2PA_ORGANIZATION_ENV = "PROVENANCE_C2PA_ORGANIZATION"  # else the certificate's O=
log = logging.getLogger(__name__)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")  # matched whole: valid_key_name


def valid_key_name(name: object) -> bool:
    """Whether ``name`` can name a key: letters, digits and ``_.:-``, 1 to 128 of them, the
    first a letter or digit. Matched whole: ``re.match`` with ``$`` admits a trailing newline."""
    return isinstance(name, str) and _NAME.fullmatch(name) is not None


_ESCAPES = {c: f"\\x{c:02x}" for c in (*range(32), 127)} | {
    ord("\\"): "\\\\",
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
}


def printable(value: object) -> str:
    """``value`` as one log line may show it: backslashes, control characters (newlines
    included) and everything beyond ASCII escaped as Python writes them (``\\\\``, ``\\n``,
    ``\\x1b``, ``\\u2028``), without quotes. A name that needs no escaping is shown as it is."""
    return str(value).translate(_ESCAPES).encode("ascii", "backslashreplace").decode("ascii")


class KeyFileError(ValueError):
    """A key file or watermark configuration is malformed (the message never holds a key)."""


def parse_entry(
    config: Any, name: str | None = None, base_dir: str | os.PathLike[str] | None = None
) -> KeyConfig:
    """One key file entry in vLLM's JSON shape (``detector.core.config.KeyConfig.from_vllm``;
    a ``key_file`` path is taken from ``base_dir``, the key file's folder)."""
    try:
        return KeyConfig.from_vllm(config, name=name, base_dir=base_dir)
    except (TypeError, ValueError) as exc:  # KeyConfig's messages name fields, never values
        raise KeyFileError(f"key {name or 'configuration'}: {exc}") from None


# A key file entry's fields for this generator alone, beside vLLM's: never passed to vLLM.
CONTENT_CREDENTIALS_FIELD = "content_credentials"  # true: every reply under this key is signed
PUBLIC_ID_FIELD = "public_id"  # the key's public identifier (default: its name)
OPTION_FIELDS = (CONTENT_CREDENTIALS_FIELD, PUBLIC_ID_FIELD)
_PUBLIC_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")


@dataclass(frozen=True)
class KeyOptions:
    """What the generator does with a key beyond sampling: whether its replies carry Content
    Credentials, and the public identifier their soft binding names (never the key)."""

    content_credentials: bool = False
    public_id: str | None = None


def _split_options(config: Any, name: str) -> tuple[Any, KeyOptions]:
    if not isinstance(config, Mapping):
        return config, KeyOptions()
    rest = {k: v for k, v in config.items() if k not in OPTION_FIELDS}
    credentials = config.get(CONTENT_CREDENTIALS_FIELD, False)
    public_id = config.get(PUBLIC_ID_FIELD, name)
    if not isinstance(credentials, bool):
        raise KeyFileError(f"key {name}: {CONTENT_CREDENTIALS_FIELD} must be true or false")
    if not isinstance(public_id, str) or not _PUBLIC_ID.fullmatch(public_id):
        raise KeyFileError(
            f"key {name}: {PUBLIC_ID_FIELD} must be 1-128 of letters, digits, '_.:-'"
        )
    return rest, KeyOptions(credentials, public_id)


def _stamp(path: Path) -> tuple[int, int, int]:
    # The inode catches atomic replaces within one timestamp tick; size and mtime, edits.
    st = path.stat()
    return st.st_ino, st.st_mtime_ns, st.st_size


def others_may_write(path: Path, status: os.stat_result) -> str | None:
    """What is wrong with a key or clients file that its group or others may write (anyone
    who can write it chooses the keys, or grants themselves every key), with the fix; None
    when only its owner may. Its owner is not checked: a mounted file (a Kubernetes Secret,
    a compose bind mount) is often root's or the host user's, not the server's."""
    if not status.st_mode & 0o022:
        return None
    return (
        f"{path} may be written by its group or by others (mode "
        f"{status.st_mode & 0o777:04o}); check it, then: chmod go-w {path}"
    )


def read_private(path: Path) -> tuple[str, tuple[int, int, int], str | None]:
    """The text of ``path``, its stamp and what ``others_may_write`` says, all of one open
    file (a replace between the check and the read cannot slip in another file)."""
    with path.open(encoding="utf-8") as handle:
        st = os.fstat(handle.fileno())
        return handle.read(), (st.st_ino, st.st_mtime_ns, st.st_size), others_may_write(path, st)


class KeyStore(Mapping[str, KeyConfig]):
    """Named watermark settings; the generator looks keys up by name per request."""

    def __init__(
        self, entries: Mapping[str, KeyConfig], options: Mapping[str, KeyOptions] | None = None
    ) -> None:
        self._entries = dict(entries)
        self._options = dict(options or {})
        self._source: Path | None = None  # the key file, when loaded from one
        self._stamp: tuple[int, int, int] | None = None

    def __getitem__(self, name: str) -> KeyConfig:
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

    def options(self, name: str | None) -> KeyOptions:
        """The generator's options for key ``name`` (the defaults for an unknown name)."""
        if name is None:
            return KeyOptions()
        return self._options.get(name, KeyOptions(public_id=name))

    @classmethod
    def from_mapping(cls, data: Any, base_dir: str | os.PathLike[str] | None = None) -> KeyStore:
        # ``{}`` is a store with no keys (every key retired): it serves only opted-out requests.
        if not isinstance(data, Mapping):
            raise KeyFileError("a key file must be a JSON object of named configurations")
        if ("key" in data and not isinstance(data["key"], Mapping)) or (
            "key_file" in data and not isinstance(data["key_file"], Mapping)
        ):
            # A bare vLLM ``--watermark-config`` object: one key, named "default".
            config, options = _split_options(data, "default")
            return cls(
                {"default": parse_entry(config, name="default", base_dir=base_dir)},
                {"default": options},
            )
        entries, all_options = {}, {}
        for name, raw in data.items():
            if not valid_key_name(name):
                raise KeyFileError(f"invalid key name {name!r}: use letters, digits, '_.:-'")
            config, all_options[name] = _split_options(raw, name)
            entries[name] = parse_entry(config, name=name, base_dir=base_dir)
        return cls(entries, all_options)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> KeyStore:
        """Load a key file; errors name the file and the key name, never a key value."""
        path = Path(path)
        try:
            text, stamp, problem = read_private(path)
        except OSError as exc:
            raise KeyFileError(f"cannot read key file {path}: {exc.strerror}") from None
        if problem:
            raise KeyFileError(f"key file {problem}")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            # The decoder's message quotes no document text, only a position.
            raise KeyFileError(f"key file {path} is not valid JSON (line {exc.lineno})") from None
        store = cls.from_mapping(data, base_dir=path.parent)
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
        path = keys_file()
        return cls.from_file(path) if path else None


# --- The generator's environment, read at call time (an empty value counts as unset) -------


def _value(name: str) -> str | None:
    return os.environ.get(name) or None


def keys_file() -> str | None:
    return _value(KEYS_FILE_ENV)


def clients_file() -> str | None:
    return _value(CLIENTS_FILE_ENV)


def enforce_watermark() -> bool:
    return os.environ.get(ENFORCE_ENV) == "1"


def default_key() -> str | None:
    return _value(DEFAULT_KEY_ENV)


def served_model() -> str:
    return _value(MODEL_ENV) or "unknown"


def tokenizer_hash() -> str | None:
    return _value(TOKENIZER_ENV)


def model_dir() -> str | None:
    return _value(MODEL_DIR_ENV)


def record_dir() -> str | None:
    return _value(RECORD_DIR_ENV)


def floor_values() -> dict[str, str]:
    """The sampling floors' variables that are set (``SamplingFloors.from_env`` parses them)."""
    return {name: value for name in FLOOR_VARIABLES if (value := os.environ.get(name))}


def content_credentials() -> bool:
    return os.environ.get(CONTENT_CREDENTIALS_ENV) == "1"


def c2pa_cert() -> str | None:
    return _value(C2PA_CERT_ENV)


def c2pa_key() -> str | None:
    return _value(C2PA_KEY_ENV)


def c2pa_organization() -> str | None:
    return _value(C2PA_ORGANIZATION_ENV)
