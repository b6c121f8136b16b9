"""Signing keys: their state in words, one row per kid, and never the private half in a
representation."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from provenance.reports.models import SigningKey
from provenance.reports.services import signing_key_create

pytestmark = pytest.mark.django_db


def test_a_signing_key_says_whether_it_is_active_retired_or_revoked():
    key = signing_key_create()
    assert str(key) == f"signing key {key.kid} (active)"
    key.retired_at = timezone.now()
    assert str(key).endswith("(retired)")
    key.revoked_at = timezone.now()
    assert str(key).endswith("(revoked)")
    assert repr(key) == f"<SigningKey kid={key.kid!r}>"
    assert bytes(key.encrypted_private).decode() not in repr(key) + str(key)


def test_a_kid_names_one_key():
    key = signing_key_create()
    with pytest.raises(IntegrityError), transaction.atomic():
        SigningKey.objects.create(kid=key.kid, public_jwk={}, encrypted_private=b"x")


def test_the_newest_key_comes_first():
    first, second = signing_key_create(), signing_key_create()
    assert list(SigningKey.objects.all()) == [second, first]
