"""The readings by name (detector.reading.readings): the early-exit reading against the full
one, the names refused (the n-gram reading: test_ngram.py)."""

from __future__ import annotations

import numpy as np
import pytest

from detector.reading.model import EARLY_EXIT_FLOOR, EarlyExitAssist, ModelAssist, load_assist
from detector.reading.readings import check_reading, load_reading, needs_model
from generator.models import embedded_model_dir


def test_early_exit_through_every_layer_is_the_full_reading_capped() -> None:
    """All 30 layers kept: the full model's reading, the observed score capped at
    f(EARLY_EXIT_FLOOR); fewer layers: another reading of the same shape."""
    from detector.text.tokenizers import load_tokenizer

    full: ModelAssist = load_assist(str(embedded_model_dir()))
    ids = load_tokenizer().encode("def add(a, b):\n    return a + b\n\nprint(add(2, 3))\n")
    layers = len(full.model.model.layers)
    every = EarlyExitAssist(embedded_model_dir(), layers=layers)
    (want,) = full.read([ids], temperature=0.7, top_p=0.9)
    (got,) = every.read([ids], temperature=0.7, top_p=0.9)
    from scipy.special import digamma

    cap = float(digamma(1.0 + 1.0 / EARLY_EXIT_FLOOR)) + 0.5772156649015329
    np.testing.assert_allclose(got.expected, want.expected, rtol=1e-9)
    np.testing.assert_allclose(got.observed, np.minimum(want.observed, cap), rtol=1e-9)
    few = EarlyExitAssist(embedded_model_dir(), layers=4)
    (short,) = few.read([ids], temperature=0.7, top_p=0.9)
    assert short.observed.shape == want.observed.shape
    assert not np.allclose(short.expected, want.expected)
    with pytest.raises(ValueError, match="layers"):
        EarlyExitAssist(embedded_model_dir(), layers=layers + 1)


def test_readings_are_named_and_unknown_names_refused() -> None:
    assert check_reading("early-exit-12") == "early-exit-12"
    assert needs_model("ort-int8") and not needs_model("ngram")
    for bad in ("early-exit-0", "early-exit-", "torch", "ort-f16", ""):
        with pytest.raises(ValueError, match="unknown reading"):
            check_reading(bad)
    with pytest.raises(ValueError, match="model directory"):
        load_reading("torch-f32")
