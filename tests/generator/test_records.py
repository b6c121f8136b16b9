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
