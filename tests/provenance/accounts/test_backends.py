"""The login throttle: the first backend refuses a locked-out username and address before
any password is read, and leaves calls without a request (scripts, the test client's login)
to the other backends."""

from __future__ import annotations

import pytest
from axes.exceptions import AxesBackendPermissionDenied
from django.contrib.auth import authenticate
from django.contrib.auth.signals import user_login_failed
from django.test import RequestFactory

from provenance.accounts.backends import LoginThrottleBackend

pytestmark = pytest.mark.django_db


def test_the_throttle_is_the_first_backend(settings):
    assert (
        settings.AUTHENTICATION_BACKENDS[0] == "provenance.accounts.backends.LoginThrottleBackend"
    )


def test_a_call_without_a_request_or_a_username_is_left_to_the_other_backends(cast):
    assert LoginThrottleBackend().authenticate(None, username="alice", password="x") is None
    request = RequestFactory().get("/oidc/callback/", REMOTE_ADDR="192.0.2.3")
    for _ in range(10):  # organization sign-ins refused by the provider's claims
        user_login_failed.send(sender=__name__, credentials={"nonce": "n"}, request=request)
    assert LoginThrottleBackend().authenticate(request, nonce="n") is None  # not locked
    assert authenticate(username="alice", password="alice-pass-123") == cast["alice"]


def test_a_locked_out_pair_is_refused_even_with_the_right_password(cast, settings):
    request = RequestFactory().post("/accounts/login/", REMOTE_ADDR="192.0.2.1")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        assert authenticate(request, username="alice", password="wrong") is None
    with pytest.raises(AxesBackendPermissionDenied):
        LoginThrottleBackend().authenticate(request, username="alice", password="x")
    assert authenticate(request, username="alice", password="alice-pass-123") is None
    elsewhere = RequestFactory().post("/accounts/login/", REMOTE_ADDR="192.0.2.2")
    assert authenticate(elsewhere, username="alice", password="alice-pass-123") == cast["alice"]
