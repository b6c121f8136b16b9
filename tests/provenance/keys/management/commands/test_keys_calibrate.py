"""``manage.py keys_calibrate [KEY ...]``: calibrates in this process, prints the rates and
never the key value."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from provenance.keys.management.commands import keys_calibrate
from provenance.keys.models import KeyCalibration
from provenance.keys.services import key_create
from tests.provenance.conftest import KEY_VALUE

pytestmark = pytest.mark.django_db


def test_the_command_calibrates_named_keys_and_prints_the_rates(alice_key, capsys):
    call_command("keys_calibrate", "acme-main", "--texts", "10", "--power-prompts", "0")
    out = capsys.readouterr().out
    assert "acme-main" in out and "prose" in out and "95% CI" in out
    assert KeyCalibration.objects.get(key=alice_key).status == "done"
    assert str(KEY_VALUE) not in out


def test_the_command_calibrates_every_active_key_by_default(alice_key, capsys):
    call_command("keys_calibrate", "--texts", "5", "--power-prompts", "0")
    assert KeyCalibration.objects.filter(key=alice_key, status="done").count() == 1


def test_the_command_refuses_an_unknown_key(alice_key):
    with pytest.raises(CommandError, match="names 0 keys"):
        call_command("keys_calibrate", "no-such-key")


def test_a_key_is_named_by_its_id_and_an_ambiguous_name_is_refused(
    alice_key, cast, tokenizer_row, capsys
):
    call_command(
        keys_calibrate.Command(), str(alice_key.id), "--texts", "4", "--power-prompts", "0"
    )
    assert f"acme-main ({alice_key.id}): threshold" in capsys.readouterr().out
    key_create(name="acme-main", team=cast["other"], tokenizer=tokenizer_row)
    with pytest.raises(CommandError, match="names 2 keys; use the key's id"):
        call_command(keys_calibrate.Command(), "acme-main")


def test_no_active_key_is_a_command_error(db):
    with pytest.raises(CommandError, match="no active keys"):
        call_command(keys_calibrate.Command())
