"""A CliError, wherever the command line raises it, reaches its user as one line and exit 2
through ``python -m detector``, with no traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from detector.cli import main as cli
from detector.cli.errors import CliError


def _program(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    return subprocess.run(
        [sys.executable, "-m", "detector", *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize(
    "args,message",
    [
        (("verify", "report.jws"), b"--jwks"),  # the parser's own error, one line
        (("detect", "--key-file", "/no/such/key", "-"), b"cannot read the key file"),
    ],
)
def test_a_cli_error_is_one_line_and_exit_2_through_the_program(args, message):
    done = _program(*args, stdin=b"some text")
    assert done.returncode == cli.EXIT_USAGE == 2 and done.stdout == b""
    assert done.stderr.startswith(b"error: ") and done.stderr.count(b"\n") == 1
    assert message in done.stderr and b"Traceback" not in done.stderr


def test_any_cli_error_raised_inside_a_command_is_reported_the_same_way(monkeypatch, capsys):
    def fails(args):
        raise CliError("the message, and only it")

    monkeypatch.setattr(cli, "run_detect", fails)
    assert cli.main(["detect", "--key", "1", "-"]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", "error: the message, and only it\n")


def test_another_exception_is_not_swallowed_as_a_user_error(monkeypatch):
    def breaks(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli, "run_detect", breaks)
    with pytest.raises(RuntimeError):
        cli.main(["detect", "--key", "1", "-"])
