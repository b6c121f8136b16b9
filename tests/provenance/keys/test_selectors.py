"""Reads of the registry: which keys a team may test, which answers may be exact, who may
calibrate, and the one place key values are decrypted."""

from __future__ import annotations

import pytest

from provenance.accounts.models import Membership
from provenance.keys.selectors import (
    KeySelectionError,
    exact_for,
    key_config,
    keys_for_check,
    keys_visible_to,
    may_calibrate,
    owned_key_ids,
)
from provenance.keys.services import key_create, key_retire
from tests.provenance.conftest import KEY_VALUE

pytestmark = pytest.mark.django_db


def test_key_config_repr_never_shows_the_value(alice_key):
    config = key_config(alice_key)
    assert config.key == KEY_VALUE
    assert str(KEY_VALUE) not in repr(config) and f"{KEY_VALUE:x}" not in repr(config)


def test_a_check_tests_own_and_shared_keys_but_not_other_teams(cast, tokenizer_row, alice_key):
    shared, _ = key_create(name="s", team=cast["other"], tokenizer=tokenizer_row, shared=True)
    private, _ = key_create(name="p", team=cast["other"], tokenizer=tokenizer_row)
    ids = {key.id for key in keys_for_check(cast["acme"])}
    assert ids == {alice_key.id, shared.id}
    assert {key.id for key in keys_for_check(cast["other"])} == {shared.id, private.id}


def test_retired_keys_are_tested_by_default_but_cannot_be_named(alice_key, cast):
    key_retire(key=alice_key)
    assert [key.id for key in keys_for_check(cast["acme"])] == [alice_key.id]
    with pytest.raises(KeySelectionError, match="retired"):
        keys_for_check(cast["acme"], [alice_key.id])


def test_naming_another_teams_private_key_reads_as_unknown(cast, tokenizer_row):
    private, _ = key_create(name="p", team=cast["other"], tokenizer=tokenizer_row)
    with pytest.raises(KeySelectionError, match="unknown"):
        keys_for_check(cast["acme"], [private.id])


def test_no_team_sees_no_key_and_a_check_without_keys_is_refused(alice_key):
    assert not keys_visible_to(None).exists()
    with pytest.raises(KeySelectionError, match="no watermark keys"):
        keys_for_check(None)


def test_named_keys_come_in_the_order_named_once_each(cast, tokenizer_row, alice_key):
    second, _ = key_create(name="second", team=cast["acme"], tokenizer=tokenizer_row)
    named = keys_for_check(cast["acme"], [second.id, alice_key.id, str(second.id)])
    assert [key.id for key in named] == [second.id, alice_key.id]


def test_exact_answers_need_the_auditor_tier_and_ownership_of_every_key(
    cast, tokenizer_row, alice_key
):
    shared, _ = key_create(name="s", team=cast["other"], tokenizer=tokenizer_row, shared=True)
    assert owned_key_ids(cast["alice"]) == {str(alice_key.id)}
    assert exact_for(cast["alice"], [alice_key.id]) and exact_for(cast["alice"], [])
    assert not exact_for(cast["alice"], [alice_key.id, shared.id])
    cast["acme"].oracle_tier = "basic"
    cast["acme"].save()
    assert owned_key_ids(cast["alice"]) is None and not exact_for(cast["alice"], [alice_key.id])


def test_only_a_team_admin_or_a_registry_administrator_may_calibrate(cast, alice_key):
    assert not may_calibrate(cast["alice"], alice_key)
    Membership.objects.filter(user=cast["alice"]).update(is_admin=True)
    assert may_calibrate(cast["alice"], alice_key)
    Membership.objects.filter(user=cast["charlie"]).update(is_admin=True)
    assert not may_calibrate(cast["charlie"], alice_key)  # an admin of another team


def test_the_key_config_follows_the_registry_row(cast, tokenizer_row):
    key, value = key_create(
        name="wide", team=cast["acme"], tokenizer=tokenizer_row, context_width=6, deduplicate=False
    )
    config = key_config(key)
    assert (config.key, config.context_width, config.name) == (value, 6, "wide")
    assert config.deduplicate_contexts == "none"
