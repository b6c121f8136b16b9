"""Human text of three genres from files every Debian machine with Python has, no network.

- ``prose``: the docstrings of the Python standard library of at least 300 characters (read
  with ``ast``, nothing imported);
- ``code``: the standard library's top-level modules;
- ``templated``: dpkg's status file, the stanzas of the packages that
  ``detector.text.ngram_sources.evaluation_package`` holds out, five stanzas a document.

None of these is a source of the shipped n-gram tables (``detector/text/ngram_sources.py``), so a
key's false-positive rate is measured on text the detector was not built from. Each genre's
documents come in a fixed order; ``human_chunks`` cuts them into texts of 250 tokens of a given
tokenizer and picks a bounded, evenly spread, deterministic subset.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import platform
import sysconfig
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from detector.paths import data_dir
from detector.text.ngram_sources import dpkg_stanzas
from detector.text.tokenizers import Tokenizer

GENRES = ("prose", "code", "templated")
CHUNK_TOKENS = 250
STDLIB = Path(sysconfig.get_paths()["stdlib"])
DPKG_STATUS = Path("/var/lib/dpkg/status")
STANZAS_PER_DOCUMENT = 5
MIN_DOCSTRING = 300


@dataclass(frozen=True)
class Corpus:
    """One genre's chunks as texts, and a description that identifies them."""

    genre: str
    texts: tuple[str, ...]
    description: str


def _docstring_sources(root: Path) -> list[Path]:
    return [
        path
        for path in sorted(root.glob("*.py")) + sorted(root.glob("*/*.py"))
        if "test" not in path.parts[-2] and not path.name.startswith("test")
    ]


def docstrings(root: Path = STDLIB) -> list[str]:
    """Docstrings of at least ``MIN_DOCSTRING`` characters of the modules under ``root``
    (one level of packages; test modules skipped), in path order.

    Parsing a standard library takes seconds, so the list is kept under the data directory,
    named by a digest of every source's path, size and modification time (and this
    function's rules): a changed file reads them all again; a missing or unreadable cache
    file is only a slower start."""
    sources = _docstring_sources(root)
    stamp = hashlib.sha256(f"{MIN_DOCSTRING} ast {platform.python_version()}".encode())
    for path in sources:
        st = path.stat()
        stamp.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    cache = data_dir() / "corpora" / f"docstrings-{stamp.hexdigest()[:32]}.json"
    try:
        found = json.loads(cache.read_text(encoding="utf-8"))
        if isinstance(found, list) and all(isinstance(d, str) for d in found):
            return found
    except (OSError, ValueError):
        pass
    out = _parse_docstrings(sources)
    try:
        cache.parent.mkdir(mode=0o700, exist_ok=True)
        partial = cache.with_name(f"{cache.name}.{os.getpid()}")
        partial.write_text(json.dumps(out), encoding="utf-8")
        partial.replace(cache)  # atomic: a reader sees the whole list or none
    except OSError:
        pass
    return out


def _parse_docstrings(sources: list[Path]) -> list[str]:
    out: list[str] = []
    for path in sources:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc and len(doc) >= MIN_DOCSTRING:
                    out.append(doc)
    return out


def genre_documents() -> dict[str, list[str]]:
    """Documents of each genre, in a fixed order."""
    return {genre: list(documents) for genre, documents in _documents().items()}


@cache  # once per process: parsing the standard library takes a few seconds
def _documents() -> dict[str, tuple[str, ...]]:
    code = [p.read_text(errors="replace") for p in sorted(STDLIB.glob("*.py"))]
    # As they are (checksums kept): the held-out packages' stanzas, five a document.
    stanzas = dpkg_stanzas(evaluation=True)
    step = STANZAS_PER_DOCUMENT
    templated = ["\n\n".join(stanzas[i : i + step]) for i in range(0, len(stanzas), step)]
    return {"prose": tuple(docstrings(STDLIB)), "code": tuple(code), "templated": tuple(templated)}


def sources() -> dict[str, str]:
    """Where each genre's text comes from, in words."""
    python = f"Python {platform.python_version()} standard library"
    return {
        "prose": f"docstrings of the {python}",
        "code": f"modules of the {python}",
        "templated": f"dpkg status stanzas of the held-out packages ({DPKG_STATUS})",
    }


def human_chunks(
    tokenizer: Tokenizer, genre: str, limit: int, size: int = CHUNK_TOKENS
) -> list[str]:
    """``limit`` texts of ``size`` tokens (as decoded text) from the genre's held-out
    documents, the same every run: their concatenation (a blank line between documents:
    most docstrings are shorter than a chunk) is cut at ``limit`` evenly spaced positions,
    each moved on to the next line start, and the first ``size`` tokens from there are one
    text. Only those windows are tokenized: 300 chunks of code cost about 0.5 MB of
    tokenization instead of the genre's 2.3 MB. Fewer texts when the genre is too short."""
    if genre not in GENRES:
        raise ValueError(f"unknown genre {genre!r}; known: {GENRES}")
    if limit < 1 or size < 1:
        raise ValueError("limit and size must be positive")
    text = "\n\n".join(_documents()[genre])
    room = len(text) // limit  # characters between two starts
    out: list[str] = []
    for k in range(limit):
        start = text.find("\n", k * room) + 1 if k else 0
        if not 0 < start < (k + 1) * room - 1:  # no line start inside this stretch
            start = k * room
        ids = _first_tokens(tokenizer, text, start, size, limit=(k + 1) * room)
        if ids is not None:
            out.append(tokenizer.decode(ids))
    return out


def _first_tokens(
    tokenizer: Tokenizer, text: str, start: int, size: int, limit: int
) -> np.ndarray | None:
    """The first ``size`` tokens of ``text[start:]`` that lie before ``limit`` (chunks do not
    overlap), or None when there are fewer. Starts with a window of 8 characters a token
    (more than any genre here needs) and widens it when that falls short."""
    window = 8 * size
    while True:
        end = min(start + window, limit, len(text))
        ids = tokenizer.encode(text[start:end])
        # The last token of a cut window may be a fragment: keep one token in reserve.
        if ids.shape[0] > size or end in (limit, len(text)):
            return ids[:size] if ids.shape[0] >= size else None
        window *= 2


def corpus(tokenizer: Tokenizer, genre: str, limit: int, size: int = CHUNK_TOKENS) -> Corpus:
    """``human_chunks`` with a description naming the source, the count, the tokenizer and
    a fingerprint of the texts (the same fingerprint means the same texts were tested)."""
    texts = tuple(human_chunks(tokenizer, genre, limit, size))
    digest = hashlib.sha256("\x00".join(texts).encode("utf-8")).hexdigest()[:12]
    description = (
        f"{sources()[genre]}: {len(texts)} chunks of {size} "
        f"{tokenizer.name} tokens (sha256 {digest})"
    )
    return Corpus(genre=genre, texts=texts, description=description)
