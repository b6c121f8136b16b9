"""What ``make run`` claims before it starts anything: its data directory (one runner each)
and its port, each refused with a message that says what to do."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from provenance.runner.startup import LOCK_NAME, StartRefused, check_port, claim_data_dir
from tests.provenance.conftest import REPO

HOLD = (
    "import sys, time; from pathlib import Path; "
    "from provenance.runner.startup import claim_data_dir; "
    "claim_data_dir(Path(sys.argv[1]), 'http://127.0.0.1:8123/'); print('held', flush=True); "
    "time.sleep(60)"
)


def test_a_data_directory_held_by_a_runner_is_refused_naming_it_until_it_ends(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(StartRefused) as refused:
            claim_data_dir(tmp_path, "http://127.0.0.1:8000/")
        said = str(refused.value)
        assert f"pid {holder.pid}, serving http://127.0.0.1:8123/" in said
        assert str(tmp_path) in said and "PROVENANCE_DATA_DIR=" in said
    finally:
        holder.kill()  # as SIGKILL leaves it: the kernel drops the lock with the process
        holder.wait(10)
    fd = claim_data_dir(tmp_path, "http://127.0.0.1:8000/")
    try:
        assert (tmp_path / LOCK_NAME).read_text() == f"{os.getpid()} http://127.0.0.1:8000/\n"
        assert (tmp_path / LOCK_NAME).stat().st_mode & 0o777 == 0o600
    finally:
        os.close(fd)


def test_a_taken_port_is_named_with_a_free_one_to_choose():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(StartRefused, match=f"port {port} on 127.0.0.1 is already in use"):
            check_port("127.0.0.1", port)
        with pytest.raises(StartRefused, match=r"PROVENANCE_PORT=\d+ make run") as refused:
            check_port("localhost", port)  # a name: its IPv4 address, as gunicorn binds it
    suggested = int(str(refused.value).rsplit("PROVENANCE_PORT=", 1)[1].split()[0])
    assert suggested != port
    check_port("127.0.0.1", suggested)  # free when it was said


def test_an_address_not_of_this_machine_is_named():
    with pytest.raises(StartRefused, match="set PROVENANCE_HOST to an address of this machine"):
        check_port("192.0.2.1", 8000)  # TEST-NET-1: never a local address
