"""The key registry: encryption at rest, one-time values, rotation, retirement, visibility."""

from __future__ import annotations

import pytest

from provenance.keys.selectors import key_config
from provenance.keys.services import (
    RegistryError,
    key_create,
    key_rotate,
    parse_key_value,
)
from tests.provenance.conftest import KEY_VALUE


@pytest.mark.parametrize(
    ("raw", "expected"), [("42", 42), ("0x2a", 42), (" 0X2A ", 42), (str(2**64 - 1), 2**64 - 1)]
)
def test_it_parses_decimal_and_hex_key_values(raw, expected):
    assert parse_key_value(raw) == expected


@pytest.mark.parametrize("raw", ["-1", str(2**64), "0xzz", "forty-two"])
def test_it_rejects_a_key_value_out_of_range_or_malformed(raw):
    with pytest.raises(RegistryError):
        parse_key_value(raw)


def test_an_empty_value_generates_a_random_64_bit_key(cast, tokenizer_row):
    _, first = key_create(name="a", team=cast["acme"], tokenizer=tokenizer_row)
    _, second = key_create(name="b", team=cast["acme"], tokenizer=tokenizer_row)
    assert first != second and 0 <= first < 2**64


def test_it_refuses_a_duplicate_key_name_within_a_team(alice_key, cast, tokenizer_row):
    with pytest.raises(RegistryError):
        key_create(name="acme-main", team=cast["acme"], tokenizer=tokenizer_row)


def test_rotation_retires_the_old_key_and_returns_a_fresh_value(alice_key):
    new_key, value = key_rotate(key=alice_key)
    alice_key.refresh_from_db()
    assert alice_key.status == "retired" and alice_key.retired_at is not None
    assert new_key.status == "active" and new_key.rotated_from_id == alice_key.id
    assert value != KEY_VALUE and key_config(new_key).key == value
    with pytest.raises(RegistryError):
        key_rotate(key=alice_key)


def test_django_error_reports_hide_key_values_in_locals(cast, tokenizer_row, settings):
    import sys

    from django.views.debug import ExceptionReporter

    settings.DEBUG = False  # production: error e-mails and logs (DEBUG pages show all)
    try:
        key_create(
            name="x",
            team=cast["acme"],
            tokenizer=tokenizer_row,
            value=str(KEY_VALUE),
            algorithm="no-such-algorithm",
        )
    except RegistryError:
        exc_info = sys.exc_info()
    report = ExceptionReporter(None, *exc_info).get_traceback_html()  # with frame locals
    assert "key_create" in report and "no-such-algorithm" in report
    assert str(KEY_VALUE) not in report
