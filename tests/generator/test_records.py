"""Draw records from vLLM's engine to its API server (``generator.records``): well-formed
tokens only, whole records, read once, stale ones pruned."""

from __future__ import annotations

import os
import time

import pytest

from generator import records
from generator.core import DrawRecord, RowState


@pytest.mark.parametrize(
    "value",
    ["../" + "a" * 29, "A" * 32, "a" * 31, "a" * 33, "a" * 31 + "/", 7, None, "g" * 32],
)
def test_only_32_hex_digits_name_a_record(value):
    assert records.record_token({records.RECORD_ARG: value}) is None


def test_a_record_is_written_whole_read_once_and_deleted(tmp_path):
    token = records.new_token()
    assert records.record_token({records.RECORD_ARG: token}) == token
    directory = tmp_path / "records"
    drawn = DrawRecord(keyed=12, with_choice=11, excess=4.25)
    records.write(directory, token, drawn)
    records.write(directory, token, drawn)  # a later step replaces the earlier one
    assert oct(directory.stat().st_mode & 0o777) == "0o700"
    assert [p.name for p in directory.iterdir()] == [f"{token}.json"]  # no partial file left
    assert records.take(directory, token) == drawn
    assert records.take(directory, token) is None and not list(directory.iterdir())


def test_a_broken_record_reads_as_none(tmp_path):
    token = records.new_token()
    (tmp_path / f"{token}.json").write_text('{"keyed": "many"}')
    assert records.take(tmp_path, token) is None


def test_stale_records_are_pruned_and_fresh_ones_kept(tmp_path):
    old, new = records.new_token(), records.new_token()
    records.write(tmp_path, old, DrawRecord())
    records.write(tmp_path, new, DrawRecord())
    past = time.time() - records.STALE_AFTER_S - 5
    os.utime(tmp_path / f"{old}.json", (past, past))
    assert records.prune(tmp_path) == 1
    assert [p.name for p in tmp_path.iterdir()] == [f"{new}.json"]


def test_after_a_step_only_the_rows_that_asked_are_written(tmp_path, monkeypatch):
    from detector.core.config import KeyConfig
    from generator.core import SamplingSettings

    monkeypatch.setenv(records.RECORD_DIR_ENV, str(tmp_path))
    asked = RowState(KeyConfig(key=1), SamplingSettings(), [], [], record=True)
    asked.record_token = records.new_token()
    quiet = RowState(KeyConfig(key=2), SamplingSettings(), [], [], record=True)
    records.write_rows([asked, None, quiet])
    assert [p.name for p in tmp_path.iterdir()] == [f"{asked.record_token}.json"]


def test_the_directory_is_created_private_and_a_shared_one_refused(tmp_path):
    fresh = tmp_path / "a" / "records"
    records.prepare(fresh)
    assert fresh.stat().st_mode & 0o777 == 0o700
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(records.RecordDirError, match="writable by nobody else"):
        records.prepare(shared)
    with pytest.raises(records.RecordDirError):
        records.write(shared, records.new_token(), DrawRecord())
    assert not list(shared.iterdir())


def test_a_directory_reached_through_a_symlink_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(records.RecordDirError, match="not a directory of its own"):
        records.prepare(link)
    token = records.new_token()
    records.write(real, token, DrawRecord(keyed=3, with_choice=3, excess=1.0))
    assert records.take(link, token) is None  # never read through the link
    assert records.prune(link, now=time.time() + 10**6) == 0


def test_a_directory_owned_by_another_user_is_refused(tmp_path, monkeypatch):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    token = records.new_token()
    records.write(theirs, token, DrawRecord())
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(theirs).st_uid + 1)  # another user now
    with pytest.raises(records.RecordDirError, match="owned by this user"):
        records.prepare(theirs)
    assert records.take(theirs, token) is None


def test_record_files_are_never_followed_through_a_symlink(tmp_path):
    directory = tmp_path / "records"
    records.prepare(directory)
    token = records.new_token()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (directory / f"{token}.json").symlink_to(victim)  # planted in place of the record
    assert records.take(directory, token) is None  # not read through the link
    partial = directory / f".{token}.{os.getpid()}.tmp"
    partial.symlink_to(victim)  # planted where the engine writes
    records.write(directory, token, DrawRecord(keyed=2, with_choice=2, excess=0.5))
    assert victim.read_text() == "precious"
    assert (directory / f"{token}.json").is_file() and not (
        directory / f"{token}.json"
    ).is_symlink()
    assert records.take(directory, token) == DrawRecord(keyed=2, with_choice=2, excess=0.5)


def test_a_failed_write_never_stops_the_engine(tmp_path, monkeypatch, caplog):
    from detector.core.config import KeyConfig
    from generator.core import SamplingSettings

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv(records.RECORD_DIR_ENV, str(shared))
    row = RowState(KeyConfig(key=1), SamplingSettings(), [], [], record=True)
    row.record_token = records.new_token()
    records.write_rows([row])
    assert not list(shared.iterdir()) and "draw record not written" in caplog.text


def test_the_compose_generator_keeps_its_records_in_a_private_tmpfs():
    """Not a fixed path under the shared /tmp: a per-container tmpfs created 0700."""
    from pathlib import Path

    import yaml

    compose = yaml.safe_load(
        (Path(__file__).resolve().parents[2] / "docker-compose.yml").read_text()
    )
    service = compose["services"]["generator"]
    directory = service["environment"][records.RECORD_DIR_ENV]
    assert not directory.startswith("/tmp")
    mounts = {entry.split(":")[0]: entry.split(":", 1)[1] for entry in service["tmpfs"]}
    assert "mode=0700" in mounts[directory].split(",")
