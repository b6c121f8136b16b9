"""The per-process row cache behind a check's key family: every change to the rows, made by
any code path (a service, a queryset update, another process), is seen by the next read."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from provenance.keys.models import KeyCalibration, WatermarkKey
from provenance.keys.selectors import keys_for_check
from provenance.keys.services import key_create, key_retire, key_rotate
from provenance.lib import rowcache
from tests.provenance.keys.test_selectors import finished_calibration

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _empty_cache():
    rowcache.clear()
    yield
    rowcache.clear()


def _family(team):
    return [(key.id, key.status) for key in keys_for_check(team)]


def test_a_key_created_or_retired_is_seen_by_the_next_check(cast, tokenizer_row, alice_key):
    team = cast["acme"]
    assert _family(team) == [(alice_key.id, "active")]
    second, _ = key_create(name="second", team=team, tokenizer=tokenizer_row)
    assert _family(team) == [(alice_key.id, "active"), (second.id, "active")]
    key_retire(key=second)
    assert _family(team) == [(alice_key.id, "active"), (second.id, "retired")]
    second.delete()
    assert _family(team) == [(alice_key.id, "active")]


def test_a_rotation_and_a_key_shared_by_another_team_are_seen(cast, tokenizer_row, alice_key):
    team = cast["acme"]
    assert _family(team) == [(alice_key.id, "active")]
    fresh, _ = key_rotate(key=alice_key)
    assert _family(team) == [(alice_key.id, "retired"), (fresh.id, "active")]
    other, _ = key_create(name="o", team=cast["other"], tokenizer=tokenizer_row)
    assert other.id not in {key_id for key_id, _ in _family(team)}
    WatermarkKey.objects.filter(id=other.id).update(shared=True)  # no signal, no service
    assert other.id in {key_id for key_id, _ in _family(team)}


def test_a_finished_calibration_is_seen_by_the_next_check(cast, alice_key):
    team = cast["acme"]
    assert keys_for_check(team)[0].latest_calibration_id is None
    run = finished_calibration(alice_key)
    assert keys_for_check(team)[0].latest_calibration_id == run.id
    KeyCalibration.objects.filter(id=run.id).update(status=KeyCalibration.Status.FAILED)
    assert keys_for_check(team)[0].latest_calibration_id is None


def test_a_change_of_a_column_or_of_the_tokenizer_is_seen(cast, alice_key):
    team = cast["acme"]
    keys_for_check(team)
    WatermarkKey.objects.filter(id=alice_key.id).update(name="renamed", alpha=0.25)
    key = keys_for_check(team)[0]
    assert (key.name, key.alpha) == ("renamed", 0.25)
    type(alice_key.tokenizer).objects.filter(id=alice_key.tokenizer_id).update(model_path="m")
    assert keys_for_check(team)[0].tokenizer.model_path == "m"


def test_unchanged_rows_are_read_without_the_orm_and_give_the_same_objects(cast, alice_key):
    team = cast["acme"]
    first = keys_for_check(team)
    with CaptureQueriesContext(connection) as queries:
        again = keys_for_check(team)
    assert len(queries) == 1  # the rows' comparison, one statement
    assert again[0] is first[0]
    assert again is not first  # a list of its own: a caller may reorder it


def test_the_sql_is_compiled_once_and_the_orm_runs_again_only_for_changed_rows(cast, alice_key):
    built: list[int] = []

    def build():
        built.append(1)
        return WatermarkKey.objects.filter(team=cast["acme"]).order_by("id")

    assert [key.id for key in rowcache.validated(("t",), build)] == [alice_key.id]
    assert len(built) == 2  # compiled, then the objects built
    for _ in range(3):
        assert [key.name for key in rowcache.validated(("t",), build)] == [alice_key.name]
    assert len(built) == 2  # neither compiled nor built again
    WatermarkKey.objects.filter(id=alice_key.id).update(name="later")
    assert [key.name for key in rowcache.validated(("t",), build)] == ["later"]
    assert len(built) == 3  # the changed rows built anew, the SQL kept
