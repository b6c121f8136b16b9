"""The manifest repository: one manifest per asset and key, newest first."""

from __future__ import annotations

import pytest
from django.db import IntegrityError

from provenance.softbinding.models import Manifest

pytestmark = pytest.mark.django_db


def _manifest(key, label, digest="a" * 64):
    return Manifest.objects.create(
        id=label,
        key=key,
        source=Manifest.Source.RECOVERED,
        store=b"jumbf",
        media_type="text/plain",
        asset_sha256=digest,
    )


def test_one_manifest_per_asset_and_key_listed_newest_first(alice_key):
    first = _manifest(alice_key, "urn:c2pa:1")
    second = _manifest(alice_key, "urn:c2pa:2", "b" * 64)
    assert list(Manifest.objects.filter(key=alice_key)) == [second, first]
    with pytest.raises(IntegrityError):
        _manifest(alice_key, "urn:c2pa:3")
    assert str(first) == "urn:c2pa:1 (recovered)"
