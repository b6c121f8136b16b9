"""Settings read from the environment: empty means the default; a wrong kind names the variable."""

from __future__ import annotations

import pytest

from provenance.env import env_bool, env_float, env_int, env_list, env_str


def test_an_unset_or_empty_value_means_the_default(monkeypatch):
    monkeypatch.delenv("PV_UNSET", raising=False)
    monkeypatch.setenv("PV_EMPTY", "")
    for name in ("PV_UNSET", "PV_EMPTY"):
        assert env_str(name, "d") == "d" and env_bool(name, True) is True
        assert env_int(name, 3) == 3 and env_float(name, 0.5, 0.0, 1.0) == 0.5
        assert env_list(name, ["x"]) == ["x"]


def test_values_are_read_as_their_kind(monkeypatch):
    monkeypatch.setenv("PV_BOOL", " Yes ")
    monkeypatch.setenv("PV_INT", "12")
    monkeypatch.setenv("PV_FLOAT", "0.25")
    monkeypatch.setenv("PV_LIST", " a, ,b ,")
    assert env_bool("PV_BOOL", False) is True and env_int("PV_INT", 0, minimum=12) == 12
    assert env_float("PV_FLOAT", 0.5, 0.0, 1.0) == 0.25 and env_list("PV_LIST", []) == ["a", "b"]


@pytest.mark.parametrize(
    ("read", "raw", "message"),
    [
        (lambda: env_bool("PV_X", False), "maybe", "PV_X must be a boolean"),
        (lambda: env_int("PV_X", 0), "1.5", "PV_X must be an integer"),
        (lambda: env_int("PV_X", 5, minimum=2), "1", "PV_X must be >= 2"),
        (lambda: env_float("PV_X", 0.5, 0.0, 1.0), "one", "PV_X must be a number"),
        (lambda: env_float("PV_X", 0.5, 0.0, 1.0), "1.0", r"PV_X must lie in \(0.0, 1.0\)"),
    ],
)
def test_a_value_not_of_its_kind_stops_with_the_variables_name(monkeypatch, read, raw, message):
    monkeypatch.setenv("PV_X", raw)
    with pytest.raises(ValueError, match=message):
        read()


def test_the_call_time_readers_follow_the_environment_when_called(monkeypatch, tmp_path):
    from provenance import env

    for name in ("PROVENANCE_HOST", "PROVENANCE_PORT", "PROVENANCE_GENERATOR_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PROVENANCE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("PROVENANCE_GENERATOR_URL", "")
    assert env.data_dir() == tmp_path and env.runner_address() == ("127.0.0.1", 8000)
    assert env.generator_url() is None and env.generator_backend() == ""
    monkeypatch.setenv("PROVENANCE_PORT", "9000")
    monkeypatch.setenv("PROVENANCE_GENERATOR_BACKEND", "transformers")
    monkeypatch.setenv("PROVENANCE_WEB_PRELOAD", "1")
    assert env.runner_address()[1] == 9000 and env.generator_backend() == "transformers"
    assert env.web_preload() is True
    monkeypatch.setenv("PROVENANCE_GENERATOR_BACKEND", "other")  # not one: the runner chooses
    assert env.generator_backend() == ""
    monkeypatch.setenv("PROVENANCE_PORT", "http")
    with pytest.raises(ValueError, match="PROVENANCE_PORT must be an integer"):
        env.runner_address()


@pytest.mark.parametrize(
    ("raw", "expected"), [("", "auto"), (" AUTO ", "auto"), ("1", True), ("off", False)]
)
def test_auto_or_a_boolean(monkeypatch, raw, expected):
    from provenance.env import env_auto_or_bool

    monkeypatch.setenv("PV_ASSIST", raw)
    assert env_auto_or_bool("PV_ASSIST") == expected


def test_a_required_value_and_a_choice_name_their_variable(monkeypatch):
    from provenance.env import env_choice, env_required

    monkeypatch.setenv("PV_X", "")
    with pytest.raises(ValueError, match="PV_X must be set when Y is"):
        env_required("PV_X", "when Y is")
    assert env_choice("PV_X", ("plain", "json")) == "plain"
    monkeypatch.setenv("PV_X", "JSON")
    assert env_choice("PV_X", ("plain", "json")) == "json"
    monkeypatch.setenv("PV_X", "xml")
    with pytest.raises(ValueError, match="PV_X must be plain or json"):
        env_choice("PV_X", ("plain", "json"))
