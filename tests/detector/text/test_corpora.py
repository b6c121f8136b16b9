"""The human corpora of key calibration: installed files only, deterministic and bounded."""

from __future__ import annotations

import socket

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
