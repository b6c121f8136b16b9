"""``manage.py public_partner_create NAME``: the key is the last word, stored only hashed."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from provenance.public.models import Partner
from provenance.public.selectors import partner_by_key


def test_it_prints_a_key_that_authenticates_the_partner(db):
    out = StringIO()
    call_command("public_partner_create", "Fact-checkers", "--per-minute", "30", stdout=out)
    key = out.getvalue().split()[-1]
    partner = partner_by_key(key)
    assert partner is not None and partner.name == "Fact-checkers" and partner.per_minute == 30
    assert Partner.objects.get().key_sha256 != key


def test_a_taken_name_is_refused(db):
    call_command("public_partner_create", "Twice", stdout=StringIO())
    with pytest.raises(CommandError, match="exists"):
        call_command("public_partner_create", "Twice", stdout=StringIO())


def test_a_budget_below_one_is_refused(db):
    with pytest.raises(CommandError, match="at least 1"):
        call_command("public_partner_create", "Zero", "--per-minute", "0", stdout=StringIO())
