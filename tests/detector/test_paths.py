"""Where the product keeps its files (detector/paths.py)."""

from __future__ import annotations

import stat

from detector import paths


def test_the_data_dir_follows_the_environment_and_is_created_private(tmp_path, monkeypatch):
    target = tmp_path / "nested" / "data"
    monkeypatch.setenv("PROVENANCE_DATA_DIR", str(target))
    assert paths.data_dir() == target
    assert target.is_dir() and stat.S_IMODE(target.stat().st_mode) & 0o077 == 0
    assert paths.data_dir() == target  # a second call finds it in place


def test_without_the_variable_it_is_var_under_the_repository(monkeypatch):
    monkeypatch.delenv("PROVENANCE_DATA_DIR", raising=False)
    assert paths.data_dir() == paths.REPO_ROOT / "var"
    assert (paths.REPO_ROOT / "detector" / "paths.py").is_file()
