"""A user saved inactive loses every token and session; other saves leave them."""

from __future__ import annotations

import pytest
from django.contrib.sessions.models import Session
from knox.models import AuthToken

from provenance.accounts import signals

pytestmark = pytest.mark.django_db


def test_saving_a_user_inactive_revokes_tokens_and_sessions(cast, client):
    client.force_login(cast["alice"])
    AuthToken.objects.create(user=cast["alice"])
    AuthToken.objects.create(user=cast["bob"])
    cast["alice"].is_active = False
    cast["alice"].save()
    assert list(AuthToken.objects.values_list("user__username", flat=True)) == ["bob"]
    assert not Session.objects.exists()


def test_other_saves_leave_the_credentials(cast, client):
    client.force_login(cast["alice"])
    AuthToken.objects.create(user=cast["alice"])
    AuthToken.objects.create(user=cast["bob"])
    cast["alice"].email = "alice@x.org"
    cast["alice"].save()
    cast["bob"].is_active = False
    cast["bob"].save(update_fields=["last_login"])  # is_active not among the fields saved
    signals.deactivated_user_signed_out(sender=None, instance=cast["alice"], created=False)
    assert AuthToken.objects.count() == 2 and Session.objects.count() == 1
