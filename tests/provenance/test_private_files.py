"""Secrets the embedded default makes for itself: generated once, kept 0600, read back by
every later process, one value however many processes start at once."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from provenance.private_files import (
    generated_secret_key,
    private_load_or_create,
    private_write,
)
from tests.provenance.conftest import REPO


def test_a_value_is_made_once_and_read_back(tmp_path):
    path = tmp_path / "sub" / "secret.key"
    first = private_load_or_create(path, generated_secret_key)
    assert private_load_or_create(path, lambda: "another") == first
    assert oct(path.stat().st_mode)[-3:] == "600" and len(first) >= 80
    assert [p.name for p in path.parent.iterdir()] == ["secret.key"]  # no temporary left


def test_a_file_made_readable_since_is_private_again(tmp_path):
    path = tmp_path / "secret.key"
    private_write(path, "value")
    path.chmod(0o644)
    assert private_load_or_create(path, generated_secret_key) == "value"
    assert oct(path.stat().st_mode)[-3:] == "600"


def test_a_link_or_an_empty_file_is_refused(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("planted")
    (tmp_path / "secret.key").symlink_to(target)
    with pytest.raises(ValueError, match="plain file"):
        private_load_or_create(tmp_path / "secret.key", generated_secret_key)
    (tmp_path / "empty.key").write_text("")
    with pytest.raises(ValueError, match="empty"):
        private_load_or_create(tmp_path / "empty.key", generated_secret_key)


def test_processes_starting_at_once_agree_on_one_value(tmp_path):
    code = (
        "import sys; from pathlib import Path; "
        "from provenance.private_files import private_load_or_create, generated_secret_key; "
        "print(private_load_or_create(Path(sys.argv[1]), generated_secret_key))"
    )
    path = tmp_path / "secret.key"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(path)], env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(6)
    ]
    values = {run.communicate(timeout=60)[0].strip() for run in runs}
    assert values == {path.read_text().strip()}


@pytest.mark.parametrize("mode", [0o666, 0o620, 0o602])
def test_a_file_others_can_write_is_refused_with_its_fix(tmp_path, mode):
    path = tmp_path / "secret.key"
    private_write(path, "planted")
    path.chmod(mode)
    with pytest.raises(ValueError, match=f"chmod go-w {path}$"):
        private_load_or_create(path, generated_secret_key)
    assert path.stat().st_mode & 0o777 == mode  # left for its owner to look at


def test_a_file_of_another_user_is_refused_with_its_fix(tmp_path, monkeypatch):
    path = tmp_path / "kek.key"
    private_write(path, "planted")
    other = path.stat().st_uid + 1
    monkeypatch.setattr(os, "geteuid", lambda: other)  # this process is another user now
    monkeypatch.setattr(os, "getuid", lambda: other)
    with pytest.raises(ValueError, match=f"chown {other} {path}"):
        private_load_or_create(path, generated_secret_key)


def test_a_directory_of_another_user_or_that_others_can_write_is_refused(tmp_path, monkeypatch):
    from provenance.private_files import private_dir

    opened = tmp_path / "open"
    opened.mkdir()
    opened.chmod(0o770)
    with pytest.raises(ValueError, match=f"chmod go-w {opened}$"):
        private_dir(opened)
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    other = theirs.stat().st_uid + 1
    monkeypatch.setattr(os, "geteuid", lambda: other)
    monkeypatch.setattr(os, "getuid", lambda: other)
    with pytest.raises(ValueError, match=f"chown {other} {theirs}"):
        private_dir(theirs)
