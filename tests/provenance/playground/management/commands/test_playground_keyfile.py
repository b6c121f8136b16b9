"""``manage.py playground_keyfile PATH``: writes the generator's key file and says how many
keys it holds."""

from __future__ import annotations

import io
import stat

import pytest
from django.core.management import call_command

from generator.config import KeyStore
from provenance.playground.keyfile import generator_key_name
from provenance.playground.management.commands import playground_keyfile
from tests.provenance.conftest import KEY_VALUE

pytestmark = pytest.mark.django_db


def test_the_command_writes_the_key_file(alice_key, tmp_path):
    path = tmp_path / "deep" / "keys.json"
    out = io.StringIO()
    call_command(playground_keyfile.Command(), str(path), stdout=out)
    assert out.getvalue().strip() == f"wrote 1 key(s) to {path}"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert KeyStore.from_file(path)[generator_key_name(alice_key)].key == KEY_VALUE
    assert str(KEY_VALUE) not in out.getvalue()


def test_no_active_key_writes_an_empty_file(db, tmp_path):
    out = io.StringIO()
    call_command(playground_keyfile.Command(), str(tmp_path / "keys.json"), stdout=out)
    assert out.getvalue().startswith("wrote 0 key(s)")
    assert (tmp_path / "keys.json").read_text() == "{}"
