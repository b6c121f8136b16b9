"""The human corpora the shipped n-gram tables are built from (detector/text/ngram_sources.py):
the evaluation split, the stanza reader, the per-package cap, the tokenized cache and a build
into a table directory of its own."""

from __future__ import annotations

import hashlib
import json

import numpy as np

from detector.text import ngram_sources, ngrams
from detector.text.ngram_sources import evaluation_package


def test_the_evaluation_split_holds_out_about_half_of_the_packages():
    picked = [evaluation_package(f"pkg{i}") for i in range(2000)]
    assert 0.45 < np.mean(picked) < 0.55
    assert evaluation_package("libc6") == evaluation_package("libc6")


def test_stanzas_are_split_on_blank_lines_and_checksums_cut_short():
    digest = "0123456789abcdef" * 4
    text = f"Package: a\nSHA256: {digest}\n\n\n\nPackage: b\nVersion: 1\n\n"
    assert ngram_sources.stanzas(text) == ["Package: a\nSHA256: 01234567", "Package: b\nVersion: 1"]
    assert ngram_sources.stanzas(text, strip=False)[0].endswith(digest)


def test_each_package_is_capped_and_test_folders_and_vendored_copies_are_left_out(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(ngram_sources, "PACKAGE_CHARS", 25)
    files = {
        "big/a.py": "x = 1\n" * 3,  # 18 characters
        "big/b.py": "y = 2\n" * 3,  # 36 in all: still under the cap when read
        "big/c.py": "z = 3\n",  # over it: left out
        "big/tests/t.py": "assert True\n",
        "small/m.py": "import os\n",
        "small/copy.py": "vendored = True\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    skip = {hashlib.sha1(b"vendored = True\n").hexdigest()}
    paths = sorted(tmp_path.rglob("*.py"))
    kept = ngram_sources._capped(paths, tmp_path, skip)
    assert sorted(kept) == sorted([files["big/a.py"], files["big/b.py"], files["small/m.py"]])


class _Tokenizer:
    content_hash = "f" * 64
    name = "Toy Tokenizer/v1"

    def __init__(self) -> None:
        self.calls = 0

    def encode(self, text: str) -> np.ndarray:
        self.calls += 1
        return np.frombuffer(text.encode(), np.uint8).astype(np.int64)


def _documents(genre: str) -> list[str]:
    words = {"prose": "the cat sat on the mat", "code": "x = 1", "templated": "Package: a"}
    return [f"{words[genre]} {i}" for i in range(4)]


def test_tokenized_corpora_come_back_equal_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(ngram_sources, "table_documents", _documents)
    tok = _Tokenizer()
    first = ngram_sources.tokenized(tok, tmp_path)
    assert tok.calls == 12 and len(list(tmp_path.glob("*.npz"))) == 3
    again = ngram_sources.tokenized(tok, tmp_path)
    assert tok.calls == 12  # read back, not tokenized again
    for genre in ngram_sources.GENRES:
        assert [d.tolist() for d in again[genre]] == [d.tolist() for d in first[genre]]


def test_a_build_writes_the_table_and_its_index_entry(tmp_path, monkeypatch):
    monkeypatch.setattr(ngram_sources, "table_documents", _documents)
    monkeypatch.setattr(ngram_sources, "TABLE_DIR", tmp_path)
    monkeypatch.setattr(ngram_sources, "shipped_index", lambda: {})
    tok = _Tokenizer()
    monkeypatch.setattr("detector.text.tokenizers.load_tokenizer", lambda source: tok)
    path = ngram_sources.build("toy", min_docs=3)
    assert path == tmp_path / "toy-tokenizer-v1.npz" and path.is_file()
    index = json.loads((tmp_path / ngrams.INDEX).read_text())
    entry = index[tok.content_hash]
    assert entry["file"] == path.name and entry["min_docs"] == 3
    assert entry["documents"] == {"templated": 4, "code": 4, "prose": 4}
    table = ngrams.NgramTable.load(path)
    assert len(table) == entry["entries"] > 0  # pairs seen in >= 3 of the documents
