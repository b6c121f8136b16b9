"""The reading the product reads with: one name, one loader, a clear refusal."""

from __future__ import annotations

import pytest

from detector.reading.choice import DEFAULT_READING, READINGS, ReadingUnavailable, load_reading


def test_the_default_is_the_first_named_and_every_name_has_a_runtime():
    assert DEFAULT_READING == next(iter(READINGS))
    assert all(runtime in ("torch", "onnxruntime") for runtime, _ in READINGS.values())


def test_an_unknown_name_is_refused_naming_the_known_ones(tmp_path):
    with pytest.raises(ValueError, match="unknown reading 'gpt'"):
        load_reading(str(tmp_path), "gpt")


def test_a_directory_without_a_model_is_unavailable_not_a_crash(tmp_path):
    with pytest.raises(ReadingUnavailable):
        load_reading(str(tmp_path), "torch-f32")


def test_the_products_readings_are_measured_ones_with_the_same_default():
    from detector.reading import readings

    assert DEFAULT_READING == readings.DEFAULT_READING
    assert all(readings.check_reading(name) == name for name in READINGS)
