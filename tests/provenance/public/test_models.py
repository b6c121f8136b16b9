"""Rows of public verification say what they are and never hold a partner's key."""

from __future__ import annotations

from provenance.public.models import Partner, PartnerUsage, ScrubEvent


def test_rows_describe_themselves(db):
    partner = Partner.objects.create(name="Regulator", key_sha256="a" * 64)
    assert str(partner) == "Regulator" and "a" * 64 not in repr(partner)
    usage = PartnerUsage.objects.create(partner=partner, status_code=429)
    assert str(usage).startswith("Regulator ") and str(usage).endswith(" 429")
    event = ScrubEvent.objects.create(family="f" * 64, variants=21, text_hashes=["f" * 64])
    assert str(event) == "scrubbing loop ffffffffffff (21 variants)"
