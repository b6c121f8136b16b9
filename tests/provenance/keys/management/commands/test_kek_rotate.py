"""``manage.py kek_rotate``: every value stored under the KEK re-encrypted under the first,
all or nothing; ``--generate`` for the embedded KEK file only."""

from __future__ import annotations

import io

import pytest
from cryptography.fernet import Fernet, InvalidToken
from django.core.management import CommandError, call_command

from provenance.keys.management.commands import kek_rotate
from provenance.keys.models import WatermarkKey
from provenance.keys.selectors import key_config
from provenance.lib import crypto
from provenance.reports.models import SigningKey
from provenance.reports.services import signing_key_active
from tests.provenance.conftest import KEY_VALUE

pytestmark = pytest.mark.django_db


def _tokens() -> tuple[bytes, bytes]:
    return (
        bytes(WatermarkKey.objects.get().encrypted_value),
        bytes(SigningKey.objects.get().encrypted_private),
    )


def test_values_move_to_the_first_kek_and_the_old_one_can_go(settings, alice_key):
    signing_key_active()
    old = settings.PROVENANCE_KEK
    before = _tokens()
    new = Fernet.generate_key().decode()
    settings.PROVENANCE_KEK = f"{new},{old}"
    out = io.StringIO()
    call_command(kek_rotate.Command(), stdout=out)
    assert out.getvalue().strip() == "re-encrypted 2 value(s) under the first KEK"
    after = _tokens()
    assert after[0] != before[0] and after[1] != before[1]
    settings.PROVENANCE_KEK = new
    assert key_config(WatermarkKey.objects.get()).key == KEY_VALUE
    crypto.decrypt_bytes(after[1])


def test_a_value_that_does_not_decrypt_changes_nothing(settings, alice_key, cast, tokenizer_row):
    from provenance.keys.services import key_create

    other, _ = key_create(name="second", team=cast["acme"], tokenizer=tokenizer_row)
    stray = Fernet(Fernet.generate_key()).encrypt(b"1")
    WatermarkKey.objects.filter(pk=other.pk).update(encrypted_value=stray)
    before = bytes(WatermarkKey.objects.get(pk=alice_key.pk).encrypted_value)
    settings.PROVENANCE_KEK = f"{Fernet.generate_key().decode()},{settings.PROVENANCE_KEK}"
    with pytest.raises(CommandError, match="nothing was changed"):
        call_command(kek_rotate.Command())
    assert bytes(WatermarkKey.objects.get(pk=alice_key.pk).encrypted_value) == before


def test_generate_is_refused_when_the_kek_comes_from_the_environment(settings):
    assert settings.PROVENANCE_KEK
    with pytest.raises(CommandError, match="PROVENANCE_KEK is set"):
        call_command(kek_rotate.Command(), "--generate")


def test_generate_rotates_the_embedded_kek_file(settings, tmp_path, cast, tokenizer_row):
    from provenance.keys.services import key_create

    settings.PROVENANCE_KEK = ""
    settings.PROVENANCE_EMBEDDED = True
    settings.DATA_DIR = tmp_path
    crypto._fernet.cache_clear()
    try:
        key, value = key_create(name="embedded", team=cast["acme"], tokenizer=tokenizer_row)
        first = (tmp_path / "kek.key").read_text().strip()
        call_command(kek_rotate.Command(), "--generate", stdout=io.StringIO())
        second = (tmp_path / "kek.key").read_text().strip()
        assert "," not in second and second != first
        assert key_config(WatermarkKey.objects.get(pk=key.pk)).key == value
        with pytest.raises(InvalidToken):  # the old KEK no longer opens it
            Fernet(first).decrypt(bytes(WatermarkKey.objects.get(pk=key.pk).encrypted_value))
    finally:
        crypto._fernet.cache_clear()
