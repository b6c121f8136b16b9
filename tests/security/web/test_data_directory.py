"""The data directory (database, key files, logs) is private however the product is
started: loading the settings creates it, or narrows an existing one, to mode 0700.

What another user could have written is never used: a data directory or a secret file
(``secret.key``, ``kek.key``, ``demo-login.txt``) that is not owned by the running user, or
that group or others may write, stops the product with a message naming the path and the
fix. A planted ``secret.key`` in another user's world-writable directory became Django's
SECRET_KEY (sessions, password-reset links and proofs of work signed with a value the
attacker chose). And one ``make run`` per data directory: a second one exits at once naming
the first one's pid.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from provenance.runner.redis_server import free_port
from tests.provenance.conftest import REPO
from tests.waiting import wait_until

THEIR_UID = 65534  # nobody


def _give_away(*paths: Path) -> str:
    """Make ``paths`` another user's: chowned to ``nobody`` when this test runs as root,
    else the product's process is told it runs as another user (the code to prepend to
    what it runs)."""
    if os.geteuid() == 0:
        for path in paths:
            os.chown(path, THEIR_UID, THEIR_UID)
        return ""
    other = os.geteuid() + 1
    return f"import os; os.geteuid = os.getuid = lambda: {other}\n"


def _product(
    data_dir: Path, code: str = "import provenance.settings", *, embedded: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` as the product starts: settings from the environment, this data dir."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PROVENANCE_"))}
    env.update(PYTHONPATH=str(REPO), PROVENANCE_DATA_DIR=str(data_dir))
    env.pop("DATABASE_URL", None)
    if embedded:  # secret.key and kek.key come from the data directory
        env.update(PROVENANCE_EMBEDDED="1", DJANGO_SETTINGS_MODULE="provenance.settings")
    else:
        env.update(PROVENANCE_EMBEDDED="0", DJANGO_SECRET_KEY=secrets.token_urlsafe(50))
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _load_settings(data_dir) -> None:
    result = _product(data_dir)
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


def test_a_secret_key_planted_in_another_users_open_directory_is_never_used(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    theirs.chmod(0o777)
    planted = theirs / "secret.key"
    planted.write_text("chosen-by-another-user\n")
    planted.chmod(0o666)
    prelude = _give_away(theirs, planted)
    code = prelude + (
        "import django; django.setup(); from django.conf import settings; "
        "print('planted used:', settings.SECRET_KEY == 'chosen-by-another-user')"
    )
    result = _product(theirs, code, embedded=True)
    assert result.returncode != 0 and "planted used" not in result.stdout, result.stdout
    refusal = result.stderr.strip().splitlines()[-1]
    assert str(theirs) in refusal and "chown" in refusal and "PROVENANCE_DATA_DIR" in refusal


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_a_data_directory_others_can_write_is_refused_and_left_as_it_is(tmp_path, mode):
    opened = tmp_path / "open"
    opened.mkdir()
    opened.chmod(mode)  # ours, but anyone (or the group) could have planted files in it
    result = _product(opened)
    assert result.returncode != 0
    assert f"chmod go-w {opened}" in result.stderr.strip().splitlines()[-1]
    assert opened.stat().st_mode & 0o777 == mode  # not silently "fixed" over what it holds


def _plant(data_dir: Path, name: str, value: str, mode: int) -> Path:
    data_dir.mkdir(mode=0o700, exist_ok=True)
    planted = data_dir / name
    planted.write_text(value + "\n")
    planted.chmod(mode)
    return planted


# Starts the product's key encryption: kek.key is read (or made) here, secret.key before.
USE_THE_KEK = (
    "import django; django.setup(); from provenance.lib.crypto import encrypt_value; "
    "encrypt_value(1); print('started')"
)


@pytest.mark.parametrize("name", ["secret.key", "kek.key"])
@pytest.mark.parametrize("mode", [0o666, 0o620, 0o602])
def test_a_secret_file_others_can_write_is_refused(tmp_path, name, mode):
    planted = _plant(tmp_path / "data", name, Fernet.generate_key().decode(), mode)
    result = _product(tmp_path / "data", USE_THE_KEK, embedded=True)
    assert result.returncode != 0 and "started" not in result.stdout
    assert f"chmod go-w {planted}" in result.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("name", ["secret.key", "kek.key"])
def test_a_secret_file_of_another_user_is_refused(tmp_path, name):
    data = tmp_path / "data"
    planted = _plant(data, name, Fernet.generate_key().decode(), 0o600)
    if os.geteuid() == 0:
        os.chown(planted, THEIR_UID, THEIR_UID)  # the directory stays ours
        result = _product(data, USE_THE_KEK, embedded=True)
    else:  # the product believes it runs as another user: directory and file are not its
        result = _product(data, _give_away(planted) + USE_THE_KEK, embedded=True)
    assert result.returncode != 0 and "started" not in result.stdout
    refusal = result.stderr.strip().splitlines()[-1]
    assert "chown" in refusal and (str(planted) in refusal or str(data) in refusal)


def test_a_planted_demo_password_is_refused(tmp_path):
    from provenance.runner.embedded import _demo_password

    planted = _plant(tmp_path / "data", "demo-login.txt", "chosen-by-another-user", 0o666)
    with pytest.raises(ValueError, match=re.escape(f"chmod go-w {planted}")):
        _demo_password(tmp_path / "data")


def _runner(data_dir: Path, port: int, lines: list[str]) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PROVENANCE_DATA_DIR": str(data_dir),
        "PROVENANCE_PORT": str(port),
        "OMP_NUM_THREADS": "1",
        "PROVENANCE_GENERATOR_URL": f"http://127.0.0.1:{free_port()}",  # no playground
    }
    for name in ("DATABASE_URL", "REDIS_URL", "PROVENANCE_KEK", "DJANGO_SETTINGS_MODULE"):
        env.pop(name, None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "provenance.runner.embedded"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True).start()
    return proc


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.mark.slow
def test_a_second_runner_on_one_data_directory_exits_at_once_naming_the_first(tmp_path):
    data_dir, port = tmp_path / "data", free_port()
    first_lines: list[str] = []
    first = _runner(data_dir, port, first_lines)
    second = third = None
    try:
        wait_until(
            lambda: "Provenance is running" in "".join(first_lines),
            180,
            0.2,
            alive=lambda: first.poll() is None,
            what=lambda: "".join(first_lines)[-3000:],
        )
        wait_until(lambda: _listening(port), 60, 0.2, alive=lambda: first.poll() is None)
        # Another port, the same data directory: two runners would share one SQLite
        # database, one set of logs and Redis directories, and the sweeper twice.
        second_lines: list[str] = []
        second = _runner(data_dir, free_port(), second_lines)
        code = second.wait(30)
        said = "".join(second_lines)
        assert code != 0, said
        assert f"pid {first.pid}" in said and str(data_dir) in said, said
        assert "PROVENANCE_DATA_DIR" in said
        # Another data directory, the same port: the port is named, with the way to choose
        # another, before anything starts (no web crash-looping on a taken port).
        third_lines: list[str] = []
        third = _runner(tmp_path / "other", port, third_lines)
        code = third.wait(30)
        said = "".join(third_lines)
        assert code != 0 and "crashed" not in said, said
        assert f"port {port}" in said and re.search(r"PROVENANCE_PORT=\d+ make run", said), said
        assert first.poll() is None  # the first one serves on
    finally:
        for proc in (third, second, first):
            if proc is not None:
                _stop(proc)
