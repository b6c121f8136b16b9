"""Settings come from the environment through typed helpers that fail loudly."""

from __future__ import annotations

import pytest

from provenance import settings as project


@pytest.mark.parametrize(
    ("helper", "raw", "message"),
    [
        (lambda: project.env_int("X_TEST", 5, minimum=1), "five", "integer"),
        (lambda: project.env_int("X_TEST", 5, minimum=1), "0", ">= 1"),
        (lambda: project.env_bool("X_TEST", False), "maybe", "boolean"),
        (lambda: project.env_float("X_TEST", 0.01, 0.0, 1.0), "1.5", r"\(0.0, 1.0\)"),
        (lambda: project.env_float("X_TEST", 0.01, 0.0, 1.0), "tiny", "number"),
    ],
)
def test_a_malformed_value_fails_loudly(monkeypatch, helper, raw, message):
    monkeypatch.setenv("X_TEST", raw)
    with pytest.raises(ValueError, match=message):
        helper()


def test_empty_or_missing_values_mean_the_default(monkeypatch):
    monkeypatch.setenv("X_TEST", "")
    assert project.env_int("X_TEST", 7) == 7 and project.env_str("X_TEST", "d") == "d"
    monkeypatch.delenv("X_TEST")
    assert project.env_list("X_TEST", ["a"]) == ["a"] and project.env_bool("X_TEST", True)


def test_values_parse(monkeypatch):
    monkeypatch.setenv("X_TEST", " a, b ,,c ")
    assert project.env_list("X_TEST", []) == ["a", "b", "c"]
    monkeypatch.setenv("X_TEST", "off")
    assert project.env_bool("X_TEST", True) is False
