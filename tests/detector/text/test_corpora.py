"""The human corpora of key calibration: installed files only, deterministic and bounded."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from detector.text import corpora
from detector.text.ngram_sources import evaluation_package
from detector.text.tokenizers import load_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("default")


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the corpora must not touch the network")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    corpora._documents.cache_clear()  # read the files again, under the guard


def test_each_genre_gives_the_asked_number_of_250_token_texts_without_network(
    tokenizer, no_network
):
    for genre in corpora.GENRES:
        texts = corpora.human_chunks(tokenizer, genre, limit=40)
        assert len(texts) == 40 and len(set(texts)) == 40, genre
        lengths = [tokenizer.encode(t).shape[0] for t in texts]
        # Decoded and encoded again, a chunk may merge or split a few tokens at its edges.
        assert all(230 <= n <= 270 for n in lengths), (genre, lengths)


def test_the_selection_is_the_same_every_time_and_spread_over_the_genre(tokenizer):
    first = corpora.corpus(tokenizer, "code", limit=20)
    again = corpora.corpus(tokenizer, "code", limit=20)
    assert first == again
    assert "sha256" in first.description and "20 chunks of 250" in first.description
    modules = {t.split("\n", 1)[0] for t in first.texts}
    assert len(modules) > 10  # not twenty chunks of one file


def test_templated_texts_come_from_packages_no_ngram_table_is_built_from(tokenizer):
    texts = corpora.human_chunks(tokenizer, "templated", limit=30)
    names = [
        line.split(":", 1)[1].strip()
        for t in texts
        for line in t.splitlines()
        if line.startswith("Package:")
    ]
    assert names and all(evaluation_package(name) for name in names)


def test_it_refuses_an_unknown_genre(tokenizer):
    with pytest.raises(ValueError, match="unknown genre"):
        corpora.human_chunks(tokenizer, "poetry", limit=5)


def _package(root: Path, doc: str) -> Path:
    (root / "pkg").mkdir(parents=True, exist_ok=True)
    (root / "alpha.py").write_text(f'"""{doc}"""\n\ndef f():\n    """{"short"}"""\n')
    (root / "pkg" / "beta.py").write_text(f'class C:\n    """{doc[::-1]}"""\n')
    (root / "test_gamma.py").write_text(f'"""{doc}"""\n')  # test modules are skipped
    return root


def test_docstrings_are_read_once_and_again_when_a_source_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("PROVENANCE_DATA_DIR", str(tmp_path / "data"))
    doc = ("A long docstring. " * 20).strip()
    root = _package(tmp_path / "lib", doc)
    first = corpora.docstrings(root)
    assert first == [doc, doc[::-1]]
    (cached,) = (tmp_path / "data" / "corpora").glob("docstrings-*.json")
    assert json.loads(cached.read_text()) == first
    # A second call reads the cache: parsing is not called.
    monkeypatch.setattr(corpora, "_parse_docstrings", lambda sources: pytest.fail("parsed"))
    assert corpora.docstrings(root) == first
    monkeypatch.undo()
    monkeypatch.setenv("PROVENANCE_DATA_DIR", str(tmp_path / "data"))
    (root / "alpha.py").write_text(f'"""{doc} Changed and longer."""\n')
    assert corpora.docstrings(root) == [f"{doc} Changed and longer.", doc[::-1]]


def test_an_unreadable_cache_is_only_a_slower_start(tmp_path, monkeypatch):
    monkeypatch.setenv("PROVENANCE_DATA_DIR", str(tmp_path / "data"))
    doc = ("Another long docstring. " * 20).strip()
    root = _package(tmp_path / "lib", doc)
    first = corpora.docstrings(root)
    (cached,) = (tmp_path / "data" / "corpora").glob("docstrings-*.json")
    cached.write_text("{not json")
    assert corpora.docstrings(root) == first
    assert json.loads(cached.read_text()) == first  # written again
