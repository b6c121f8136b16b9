"""What the gunicorn master loads before it forks (``provenance.preload``)."""

from __future__ import annotations

import sys

import pytest
from django.db import connections

from detector.text import tokenizers
from provenance import preload
from provenance.keys.models import Tokenizer


@pytest.mark.django_db(transaction=True)  # preload closes the connection it used
def test_preload_loads_every_registered_tokenizer_and_closes_the_connection(tokenizer_row):
    tokenizers._load.cache_clear()
    preload.preload(tokenizers=True)
    assert tokenizers._load.cache_info().currsize == Tokenizer.objects.count() >= 1
    connections["default"].close()  # the count above reopened it
    preload.preload(tokenizers=True)  # a second time: served from the process's cache
    assert tokenizers._load.cache_info().hits >= 1
    assert connections["default"].connection is None  # nothing for a forked worker to share
    assert "provenance.checks.api" in sys.modules  # the URLconf and its views


@pytest.mark.django_db(transaction=True)
def test_preload_without_tokenizers_reads_no_database(django_assert_num_queries):
    with django_assert_num_queries(0):
        preload.preload(tokenizers=False)
    assert "drf_spectacular.views" in sys.modules


@pytest.mark.django_db(transaction=True)
def test_a_tokenizer_that_cannot_load_is_left_to_the_request(tokenizer_row, caplog):
    Tokenizer.objects.create(
        name="gone",
        source_kind=Tokenizer.Source.HF_DIR,
        source_path="/nonexistent/tokenizer-dir",
        content_hash="0" * 64,
        vocab_size=1,
    )
    preload.preload(tokenizers=True)  # logs the broken one, loads the rest, raises nothing
    assert "gone" in caplog.text
