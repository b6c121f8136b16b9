"""A worker's warm-up loads every registered tokenizer; one that cannot load is logged and
skipped, not fatal."""

from __future__ import annotations

import logging

from provenance.checks.services.warmup import tokenizers_load, tokenizers_warm
from provenance.keys.models import Tokenizer


def test_every_registered_tokenizer_is_loaded(tokenizer_row):
    loaded = tokenizers_load()
    assert [t.content_hash for t in loaded] == [tokenizer_row.content_hash]
    assert tokenizers_warm() == 1


def test_a_tokenizer_that_changed_is_logged_and_skipped(tokenizer_row, caplog):
    Tokenizer.objects.create(
        name="changed",
        source_kind=tokenizer_row.source_kind,
        source_path=tokenizer_row.source_path,
        content_hash="0" * 64,
        vocab_size=tokenizer_row.vocab_size,
    )
    with caplog.at_level(logging.WARNING, logger="provenance.checks.services.warmup"):
        assert tokenizers_warm() == 1
    assert "'changed' changed since it was registered" in caplog.text


def test_assisting_models_load_only_when_assistance_has_a_budget(tokenizer_row, monkeypatch):
    calls = []
    monkeypatch.setattr("provenance.checks.services.warmup.assist_budget", lambda: 0)
    monkeypatch.setattr(
        "provenance.checks.services.warmup.assist_for", lambda t: calls.append(t) or None
    )
    Tokenizer.objects.filter(id=tokenizer_row.id).update(model_path="/models/x")
    tokenizers_warm()
    assert calls == []
    monkeypatch.setattr("provenance.checks.services.warmup.assist_budget", lambda: 1)
    tokenizers_warm()
    assert [t.model_path for t in calls] == ["/models/x"]
