"""KEK rotation covers every value stored under the KEK: the encrypted fields are found by
model introspection, so a field added later cannot be forgotten by ``kek_rotate``."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.apps import apps
from django.core.management import call_command
from django.db import models

from provenance.accounts.models import ExternalIdentity
from provenance.accounts.services import identity_signed_in
from provenance.keys.services import encrypted_fields
from provenance.lib import crypto
from provenance.reports.services import signing_key_rotate
from provenance.webhooks.services import webhook_secret_rotate
from tests.provenance.conftest import TEST_KEK

pytestmark = pytest.mark.django_db

# Binary fields that hold no secret (a stream's anytime state and its token ids, from which
# its final decision is made; an uploaded file staged until a worker reads it, kept like the
# check's text it becomes): everything else binary must be an ``encrypted_*`` field,
# re-encrypted by kek_rotate.
NOT_SECRET = {("streams", "stream", "state"), ("streams", "stream", "token_ids")}
NOT_SECRET |= {("checks", "upload", "content")}
# A kept C2PA manifest store: signed and public by design (the resolution API serves it).
NOT_SECRET |= {("softbinding", "manifest", "store")}


def test_every_binary_field_is_encrypted_or_known_not_to_be_secret():
    binary = {
        (model._meta.app_label, model._meta.model_name, field.name)
        for model in apps.get_models()
        for field in model._meta.get_fields()
        if isinstance(field, models.BinaryField)
    }
    encrypted = {(m._meta.app_label, m._meta.model_name, name) for m, name in encrypted_fields()}
    assert binary - NOT_SECRET == encrypted
    assert {
        ("keys", "watermarkkey", "encrypted_value"),
        ("webhooks", "teamwebhook", "encrypted_secret"),
        ("reports", "signingkey", "encrypted_private"),
        ("accounts", "externalidentity", "encrypted_refresh_token"),
    } <= encrypted


def test_kek_rotate_re_encrypts_every_encrypted_field(settings, cast, alice_key):
    signing_key_rotate()
    _, secret = webhook_secret_rotate(team=cast["acme"], default_url="https://93.184.216.34/h")
    ExternalIdentity.objects.create(user=cast["bob"], subject="bob-at-the-provider")
    identity_signed_in(subject="bob-at-the-provider", refresh_token="a-refresh-token")
    before = {}
    for model, name in encrypted_fields():
        rows = dict(model._default_manager.values_list("pk", name))
        assert rows, f"no {model.__name__} row to rotate: add one to this test"
        before[(model, name)] = {pk: crypto.decrypt_bytes(token) for pk, token in rows.items()}
    new = Fernet.generate_key().decode()
    settings.PROVENANCE_KEK = f"{new},{TEST_KEK}"
    call_command("kek_rotate")
    settings.PROVENANCE_KEK = new  # the old KEK is gone: every value still opens
    for (model, name), plain in before.items():
        rows = dict(model._default_manager.values_list("pk", name))
        assert {pk: crypto.decrypt_bytes(token) for pk, token in rows.items()} == plain, name
    assert b"a-refresh-token" in before[(ExternalIdentity, "encrypted_refresh_token")].values()
    assert secret.encode() in before[next(k for k in before if k[1] == "encrypted_secret")].values()
