"""The key registry: encryption at rest, one-time values, rotation, retirement, visibility."""

from __future__ import annotations

import pytest

from provenance.keys.crypto import KeyDecryptionError, decrypt_value
from provenance.keys.models import WatermarkKey
from provenance.keys.selectors import KeySelectionError, key_config, keys_for_check
from provenance.keys.services import (
    RegistryError,
    key_create,
    key_retire,
    key_rotate,
    parse_key_value,
)
from tests.provenance.conftest import KEY_VALUE


def test_the_key_value_is_stored_encrypted_and_decrypts_back(alice_key):
    stored = bytes(WatermarkKey.objects.get(id=alice_key.id).encrypted_value)
    assert str(KEY_VALUE).encode() not in stored
    assert KEY_VALUE.to_bytes(8, "big") not in stored
    assert decrypt_value(stored) == KEY_VALUE


def test_a_tampered_ciphertext_is_refused_without_detail(alice_key):
    stored = bytearray(bytes(alice_key.encrypted_value))
    stored[-5] ^= 1
    with pytest.raises(KeyDecryptionError) as info:
        decrypt_value(bytes(stored))
    assert str(KEY_VALUE) not in str(info.value)


def test_key_config_repr_never_shows_the_value(alice_key):
    config = key_config(alice_key)
    assert config.key == KEY_VALUE
    assert str(KEY_VALUE) not in repr(config) and f"{KEY_VALUE:x}" not in repr(config)


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


def test_a_check_tests_own_and_shared_keys_but_not_other_teams(cast, tokenizer_row, alice_key):
    shared, _ = key_create(name="s", team=cast["other"], tokenizer=tokenizer_row, shared=True)
    private, _ = key_create(name="p", team=cast["other"], tokenizer=tokenizer_row)
    ids = {key.id for key in keys_for_check(cast["acme"])}
    assert ids == {alice_key.id, shared.id}
    assert {key.id for key in keys_for_check(cast["other"])} == {shared.id, private.id}


def test_retired_keys_are_tested_by_default_but_cannot_be_named(alice_key, cast):
    key_retire(key=alice_key)
    assert [key.id for key in keys_for_check(cast["acme"])] == [alice_key.id]
    with pytest.raises(KeySelectionError, match="retired"):
        keys_for_check(cast["acme"], [alice_key.id])


def test_naming_another_teams_private_key_reads_as_unknown(cast, tokenizer_row):
    private, _ = key_create(name="p", team=cast["other"], tokenizer=tokenizer_row)
    with pytest.raises(KeySelectionError, match="unknown"):
        keys_for_check(cast["acme"], [private.id])


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
