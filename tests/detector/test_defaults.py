"""The library's own defaults from the environment (detector/defaults.py), and callers'
parameters taking precedence over them."""

from __future__ import annotations

from detector import defaults, paths
from detector.core import scoring


def test_the_data_dir_default_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("PROVENANCE_DATA_DIR", str(tmp_path / "d"))
    assert defaults.data_dir() == tmp_path / "d"
    monkeypatch.setenv("PROVENANCE_DATA_DIR", "")  # empty: the default
    assert defaults.data_dir() == defaults.REPO_ROOT / "var"
    assert not (tmp_path / "d").exists()  # reading a default creates nothing


def test_a_callers_data_dir_wins_over_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("PROVENANCE_DATA_DIR", str(tmp_path / "env"))
    assert paths.data_dir(tmp_path / "given") == tmp_path / "given"
    assert (tmp_path / "given").is_dir() and not (tmp_path / "env").exists()


def test_the_device_default_and_a_callers_choice(monkeypatch):
    monkeypatch.delenv("PROVENANCE_DEVICE", raising=False)
    assert defaults.device() == "auto"
    monkeypatch.setenv("PROVENANCE_DEVICE", "CPU")
    assert defaults.device() == "cpu"
    scoring.cuda_available.cache_clear()
    try:
        assert scoring.cuda_available() is False  # the default, read from the environment
        monkeypatch.setenv("PROVENANCE_DEVICE", "auto")
        assert scoring.cuda_available("cpu") is False  # a caller's choice, whatever the device
    finally:
        scoring.cuda_available.cache_clear()
