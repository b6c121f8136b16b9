"""The data directory (database, key files, logs) is private however the product is
started: loading the settings creates it, or narrows an existing one, to mode 0700."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys

from tests.provenance.conftest import REPO


def _load_settings(data_dir) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PROVENANCE_"))}
    env.update(
        PYTHONPATH=str(REPO),
        PROVENANCE_DATA_DIR=str(data_dir),
        PROVENANCE_EMBEDDED="0",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
    )
    result = subprocess.run(
        [sys.executable, "-c", "import provenance.settings"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_a_new_data_directory_is_private(tmp_path):
    _load_settings(tmp_path / "fresh" / "data")
    assert oct((tmp_path / "fresh" / "data").stat().st_mode & 0o777) == "0o700"


def test_an_open_data_directory_is_made_private(tmp_path):
    opened = tmp_path / "open"
    opened.mkdir(mode=0o755)
    opened.chmod(0o755)
    _load_settings(opened)
    assert oct(opened.stat().st_mode & 0o777) == "0o700"
