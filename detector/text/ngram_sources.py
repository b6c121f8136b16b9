"""Human corpora that the shipped n-gram tables are built from, and the split that keeps the
corpora used to evaluate them out.

Three genres, all from files a Debian machine with this project's virtualenv has:

- prose: ``/usr/share/doc`` (Debian changelogs, copyright files, READMEs, text and Markdown)
  and ``/usr/share/common-licenses``;
- code: the ``.py`` files of the virtualenv's ``site-packages`` and of
  ``/usr/lib/python3/dist-packages``, and C headers under ``/usr/include``;
- templated: package stanzas of APT's ``Packages`` lists and of dpkg's status file.

Held out for evaluation, never read here: the Python standard library (its modules are the
code genre of ``benchmarks/bench_dispersion.py``, its docstrings the prose genre), and the
dpkg and APT stanzas of every package that ``evaluation_package`` picks (about half, chosen by
a hash of the package name, so the split is the same on every machine).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from detector.text.ngrams import INDEX, TABLE_DIR, NgramTable, build_table, shipped_index

GENRES = ("templated", "code", "prose")
DEFAULT_MIN_DOCS = 3

DOC_ROOT = Path("/usr/share/doc")
LICENSES = Path("/usr/share/common-licenses")
DPKG_STATUS = Path("/var/lib/dpkg/status")
APT_LISTS = Path("/var/lib/apt/lists")
INCLUDE = Path("/usr/include")
DIST_PACKAGES = Path("/usr/lib/python3/dist-packages")

# Per-file and per-source caps keep a build to a few minutes on one core and keep one big
# package from dominating its genre.
FILE_CHARS = 16_000
PACKAGE_CHARS = 120_000
# Checksums are unique per package, so no pair inside one recurs, and long hex strings
# tokenize slowly: they are cut to their first 8 digits (the field names around them stay).
_CHECKSUM = re.compile(r"\b([0-9a-f]{8})[0-9a-f]{24,}\b")


def evaluation_package(name: str) -> bool:
    """True for the packages held out for evaluation (about half, the same everywhere)."""
    return hashlib.sha256(name.encode()).digest()[0] & 1 == 0


def _package_name(stanza: str) -> str:
    match = re.match(r"Package:\s*(\S+)", stanza)
    return match.group(1) if match else ""


def stanzas(text: str, *, strip: bool = True) -> list[str]:
    """The non-empty package stanzas of a dpkg or APT list (checksums cut short unless
    ``strip`` is false)."""
    found = [s for s in text.split("\n\n") if s.strip()]
    return [_CHECKSUM.sub(r"\1", s) for s in found] if strip else found


def dpkg_stanzas(*, evaluation: bool) -> list[str]:
    """dpkg status stanzas of the evaluation half (``evaluation=True``, as they are) or of the
    other half (checksums cut short)."""
    if not DPKG_STATUS.is_file():
        return []
    found = stanzas(DPKG_STATUS.read_text(errors="replace"), strip=not evaluation)
    return [s for s in found if evaluation_package(_package_name(s)) == evaluation]


def _apt_lists() -> Iterator[str]:
    for path in sorted(APT_LISTS.glob("*_Packages*")):
        if path.suffix == ".lz4":
            done = subprocess.run(
                ["/usr/lib/apt/apt-helper", "cat-file", str(path)], capture_output=True
            )
            yield done.stdout.decode(errors="replace")
        elif path.suffix == "":
            yield path.read_text(errors="replace")


def templated_documents() -> list[str]:
    """APT and dpkg stanzas of the packages not held out, one stanza per document."""
    seen: set[str] = set()
    out = []
    for text in _apt_lists():
        for s in stanzas(text):
            if not evaluation_package(_package_name(s)) and s not in seen:
                seen.add(s)
                out.append(s)
    return out + dpkg_stanzas(evaluation=False)


def _read(path: Path) -> str:
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt", errors="replace") as f:
                return f.read(FILE_CHARS)
        with path.open(errors="replace") as f:
            return f.read(FILE_CHARS)
    except (OSError, EOFError):
        return ""


def prose_documents() -> list[str]:
    """Debian documentation and licences, one file per document, at most ``FILE_CHARS`` each."""
    wanted = re.compile(r"(changelog|copyright|README|NEWS|\.txt|\.md|\.rst)", re.IGNORECASE)
    paths = [p for p in sorted(DOC_ROOT.rglob("*")) if p.is_file() and wanted.search(p.name)]
    paths += sorted(p for p in LICENSES.glob("*") if p.is_file())
    return [t for t in (_read(p) for p in paths) if t.strip()]


def _capped(paths: list[Path], root: Path, skip: set[str]) -> list[str]:
    """Files of each top-level package under ``root``, at most ``PACKAGE_CHARS`` a package."""
    out: list[str] = []
    used: dict[str, int] = {}
    for path in paths:
        parts = path.relative_to(root).parts
        if any(p in ("tests", "test", "_distutils", "__pycache__") for p in parts):
            continue
        if used.get(parts[0], 0) >= PACKAGE_CHARS:
            continue
        text = _read(path)
        if not text.strip() or hashlib.sha1(text.encode()).hexdigest() in skip:
            continue
        used[parts[0]] = used.get(parts[0], 0) + len(text)
        out.append(text)
    return out


def code_documents() -> list[str]:
    """Python modules of installed packages and C headers, one file per document; a file equal
    to a module of the standard library (a vendored copy) is left out with it."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    skip = {hashlib.sha1(_read(p).encode()).hexdigest() for p in stdlib.rglob("*.py")}
    roots = [Path(p) for p in sys.path if p.endswith("site-packages")] + [DIST_PACKAGES]
    out: list[str] = []
    for root in roots:
        if root.is_dir():
            out += _capped(sorted(root.rglob("*.py")), root, skip)
    if INCLUDE.is_dir():
        out += _capped(sorted(INCLUDE.rglob("*.h")), INCLUDE, skip)
    return out


def table_documents(genre: str) -> list[str]:
    """One genre's documents for a table, in a fixed order."""
    sources = {
        "prose": prose_documents,
        "code": code_documents,
        "templated": templated_documents,
    }
    return sources[genre]()


def tokenized(tokenizer: Any, cache: Path | None = None) -> dict[str, list[NDArray[np.int64]]]:
    """``table_documents`` tokenized, per genre; kept under ``cache`` when given (tokenizing
    the ~110 M characters takes several minutes on one core)."""
    out: dict[str, list[NDArray[np.int64]]] = {}
    for genre in GENRES:
        path = cache / f"{tokenizer.content_hash[:16]}-{genre}.npz" if cache else None
        if path is not None and path.is_file():
            with np.load(path) as data:
                out[genre] = np.split(data["ids"], data["ends"][:-1])
            continue
        out[genre] = [tokenizer.encode(d) for d in table_documents(genre)]
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            ends = np.cumsum([d.shape[0] for d in out[genre]])
            np.savez(path, ids=np.concatenate(out[genre]), ends=ends)
    return out


def build(tokenizer_source: str, *, min_docs: int, cache: Path | None = None) -> Path:
    """Build and ship the table of one tokenizer: ``detector/text/ngram_tables/<name>.npz`` plus
    its entry in the index (keyed by the tokenizer's content hash)."""
    from detector.text.tokenizers import load_tokenizer

    tok = load_tokenizer(tokenizer_source)
    per_genre = tokenized(tok, cache)
    table = build_table(
        [d for docs in per_genre.values() for d in docs],
        min_docs=min_docs,
        tokenizer_hash=tok.content_hash,
    )
    name = re.sub(r"[^A-Za-z0-9.-]+", "-", tok.name).strip("-").lower()
    entry: dict[str, Any] = {
        "file": f"{name}.npz",
        "tokenizer": tok.name,
        "min_docs": min_docs,
        "entries": len(table),
        "documents": {g: len(d) for g, d in per_genre.items()},
        "tokens": {g: int(sum(x.shape[0] for x in d)) for g, d in per_genre.items()},
        "built": time.strftime("%Y-%m-%d"),
    }
    table = NgramTable(table.hashes, table.width, table.tokenizer_hash, meta=entry)
    TABLE_DIR.mkdir(exist_ok=True)
    table.save(TABLE_DIR / entry["file"])
    index = {k: v for k, v in shipped_index().items() if v["file"] != entry["file"]}
    index[tok.content_hash] = entry
    (TABLE_DIR / INDEX).write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    return TABLE_DIR / entry["file"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m detector.text.ngram_sources", description="Build a shipped n-gram table."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build the table of one tokenizer from human corpora")
    b.add_argument("--tokenizer", default="default", help="default, mistral-v3, a path, ...")
    b.add_argument("--min-docs", type=int, default=DEFAULT_MIN_DOCS)
    b.add_argument("--cache", type=Path, help="keep tokenized corpora here between builds")
    options = parser.parse_args(argv)
    path = build(options.tokenizer, min_docs=options.min_docs, cache=options.cache)
    print(f"{path}: {path.stat().st_size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
