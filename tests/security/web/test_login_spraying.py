"""Password guessing is counted three ways: per (username, address) by axes, and, beside it,
per address across every username (one password sprayed over many accounts) and per
username across every address (one account guessed from many). Before, only the pair was
counted: a spray over many user names from one address was never slowed."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

SPRAYED = "Spring2026!"


def test_one_password_sprayed_over_many_usernames_is_stopped(client, cast, settings):
    settings.PROVENANCE_LOGIN_ADDRESS_FAILURES = 8
    answers = [
        client.post("/accounts/login/", {"username": f"user-{i}", "password": SPRAYED}).status_code
        for i in range(12)
    ]
    assert answers[:8] == [200] * 8  # the form again, with its error
    assert answers[8:] == [429] * 4
    # From that address even a right password is refused until the window ends ...
    right = client.post("/accounts/login/", {"username": "bob", "password": "bob-pass-123"})
    assert right.status_code == 429 and "_auth_user_id" not in client.session
    # ... while another address signs in.
    elsewhere = client.post(
        "/accounts/login/",
        {"username": "bob", "password": "bob-pass-123"},
        REMOTE_ADDR="198.51.100.7",
    )
    assert elsewhere.status_code == 302


def test_one_username_guessed_from_many_addresses_is_stopped(client, cast, settings):
    settings.PROVENANCE_LOGIN_USERNAME_FAILURES = 6
    for i in range(6):
        guess = {"username": "alice", "password": f"guess-{i}"}
        answer = client.post("/accounts/login/", guess, REMOTE_ADDR=f"203.0.113.{i + 1}")
        assert answer.status_code == 200  # each address guessed once: no pair is locked
    refused = client.post(
        "/accounts/login/",
        {"username": "alice", "password": "guess-x"},
        REMOTE_ADDR="203.0.113.99",
    )
    assert refused.status_code == 429
    other = client.post(
        "/accounts/login/",
        {"username": "bob", "password": "bob-pass-123"},
        REMOTE_ADDR="203.0.113.99",
    )
    assert other.status_code == 302  # another username from a fresh address is not locked


def test_the_defaults_leave_room_for_people_and_stay_above_the_pairs(settings):
    assert settings.AXES_FAILURE_LIMIT == 5
    assert settings.PROVENANCE_LOGIN_ADDRESS_FAILURES == 20
    assert settings.PROVENANCE_LOGIN_USERNAME_FAILURES == 50
