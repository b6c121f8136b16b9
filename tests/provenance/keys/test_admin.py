"""Admin: a key value is shown once on creation and never again; permissions gate keys."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from provenance.accounts.services import user_create
from provenance.keys.models import Tokenizer, WatermarkKey
from tests.provenance.conftest import KEY_VALUE


@pytest.fixture
def admin_client(client, cast):
    root = user_create(username="root", password="root-pass-123", is_staff=True, is_superuser=True)
    client.force_login(root)
    return client


def _add_key(client, tokenizer, team, value="", name="new-key"):
    return client.post(
        "/admin/keys/watermarkkey/add/",
        {
            "name": name,
            "team": team.id,
            "tokenizer": tokenizer.id,
            "algorithm": "gumbel",
            "alpha": "0.1",
            "context_width": "4",
            "deduplicate": "on",
            "value": value,
        },
    )


def test_adding_a_key_shows_its_value_once_then_never(admin_client, cast, tokenizer_row):
    value = 0xDEADBEEFCAFEF00D
    response = _add_key(admin_client, tokenizer_row, cast["acme"], hex(value))
    assert response.status_code == 200 and str(value) in response.content.decode()
    assert "no-store" in response["Cache-Control"]
    key = WatermarkKey.objects.get(name="new-key")
    for url in [
        "/admin/keys/watermarkkey/",
        f"/admin/keys/watermarkkey/{key.id}/change/",
        f"/admin/keys/watermarkkey/{key.id}/history/",
        "/admin/",
    ]:
        page = admin_client.get(url).content.decode()
        assert str(value) not in page and f"{value:x}" not in page.lower(), url


def test_a_generated_key_is_shown_once_and_it_detects(admin_client, cast, tokenizer_row):
    response = _add_key(admin_client, tokenizer_row, cast["acme"])
    shown = response.context["value"]
    from provenance.keys.selectors import key_config

    assert key_config(WatermarkKey.objects.get(name="new-key")).key == shown


def test_a_bad_value_is_a_form_error(admin_client, cast, tokenizer_row):
    response = _add_key(admin_client, tokenizer_row, cast["acme"], "-5")
    assert response.status_code == 200 and "2**64" in response.content.decode()
    assert not WatermarkKey.objects.filter(name="new-key").exists()


def test_the_change_form_has_no_value_field(admin_client, alice_key):
    page = admin_client.get(f"/admin/keys/watermarkkey/{alice_key.id}/change/").content.decode()
    assert 'name="value"' not in page and 'name="encrypted_value"' not in page
    assert str(KEY_VALUE) not in page


def test_rotate_action_shows_the_new_value_once(admin_client, alice_key):
    response = admin_client.post(
        "/admin/keys/watermarkkey/",
        {"action": "rotate_keys", "_selected_action": [alice_key.id]},
    )
    assert response.status_code == 200 and "shown this once" in response.content.decode()
    alice_key.refresh_from_db()
    assert alice_key.status == "retired"


def test_staff_without_key_permissions_cannot_see_keys(client, alice_key):
    staff = user_create(username="staffer", password="staff-pass-123", is_staff=True)
    client.force_login(staff)
    assert client.get("/admin/keys/watermarkkey/").status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="view_watermarkkey"))
    assert client.get("/admin/keys/watermarkkey/").status_code == 200
    change = client.get(f"/admin/keys/watermarkkey/{alice_key.id}/change/")
    assert change.status_code == 200 and str(KEY_VALUE) not in change.content.decode()
    assert client.get("/admin/keys/watermarkkey/add/").status_code == 403


def test_registering_a_bad_tokenizer_path_is_a_form_error(admin_client, tmp_path):
    response = admin_client.post(
        "/admin/keys/tokenizer/add/",
        {"name": "broken", "source_kind": "hf_dir", "source_path": str(tmp_path / "nope")},
    )
    assert response.status_code == 200 and "cannot load tokenizer" in response.content.decode()
    assert not Tokenizer.objects.filter(name="broken").exists()


def test_registering_a_gguf_tokenizer_records_its_hash(admin_client, tokenizer_row):
    from detector.text.tokenizers import embedded_gguf_path

    response = admin_client.post(
        "/admin/keys/tokenizer/add/",
        {"name": "gguf-copy", "source_kind": "gguf", "source_path": str(embedded_gguf_path())},
    )
    assert response.status_code == 302
    row = Tokenizer.objects.get(name="gguf-copy")
    assert row.content_hash == tokenizer_row.content_hash and row.vocab_size == 49152
