"""Reads compiled once per thread: the same objects the ORM gives, every call reading the
database, any other query read through the ORM."""

from __future__ import annotations

import threading
from unittest import mock

import pytest
from django.db import connection
from django.db.models.sql.compiler import SQLCompiler
from django.test.utils import CaptureQueriesContext

from provenance.checks.models import Check
from provenance.checks.selectors import check_get
from provenance.checks.services import check_create, check_score
from provenance.lib import precompiled

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh():
    precompiled.clear()
    yield
    precompiled.clear()


def _read(check_id, team):
    return precompiled.objects(
        ("test-read",),
        lambda: (
            Check.objects.filter(id=check_id, team=team)
            .defer("text")
            .select_related("submitted_by")
        ),
        (precompiled.prepared(Check, "id", check_id), team.pk),
    )


def _fields(check: Check, but: str = "") -> dict:
    return {
        f.attname: getattr(check, f.attname)
        for f in Check._meta.concrete_fields
        if f.attname != but
    }


def test_the_objects_are_the_orms_with_their_relations_and_deferred_fields(cast, alice_key):
    team = cast["acme"]
    made = [check_create(user=cast[name], text=f"text of {name}") for name in ("alice", "bob")]
    for check in made:
        (got,) = _read(check.id, team)
        orm = Check.objects.select_related("submitted_by").get(id=check.id)
        assert got.get_deferred_fields() == {"text"} and got._state.db == "default"
        assert _fields(got, but="text") == _fields(orm, but="text")
        with CaptureQueriesContext(connection) as queries:
            assert got.submitted_by.username == orm.submitted_by.username  # no query
        assert len(queries) == 0


def test_the_statement_is_compiled_once_and_every_call_reads_the_rows(cast, alice_key):
    team = cast["acme"]
    first = check_create(user=cast["alice"], text="first")
    second = check_create(user=cast["alice"], text="second")
    assert [c.id for c in _read(first.id, team)] == [first.id]
    with mock.patch.object(SQLCompiler, "as_sql", side_effect=AssertionError("compiled")):
        with CaptureQueriesContext(connection) as queries:
            assert [c.id for c in _read(second.id, team)] == [second.id]
            assert _read(first.id, cast["other"]) == []  # another team's id: no row
            Check.objects.filter(id=first.id).update(filename="renamed.txt")
            assert _read(first.id, team)[0].filename == "renamed.txt"
    assert len(queries) == 4  # one statement a read, and the UPDATE


def test_parameters_that_are_not_the_orms_read_through_the_orm(cast, alice_key):
    team = cast["acme"]
    check = check_create(user=cast["alice"], text="a text")
    wrong = (str(check.id), team.pk)  # a UUID's text: neither SQLite's form nor PostgreSQL's
    found = precompiled.objects(
        ("test-wrong",), lambda: Check.objects.filter(id=check.id, team=team), wrong
    )
    assert precompiled._local.by_key[("test-wrong",)] is None
    assert [c.id for c in found] == [check.id]
    other = check_create(user=cast["alice"], text="another")
    found = precompiled.objects(
        ("test-wrong",), lambda: Check.objects.filter(id=other.id, team=team), (other.id, 0)
    )
    assert [c.id for c in found] == [other.id]  # the ORM's own parameters, not the ones given


def test_each_thread_compiles_its_own_statement(cast, alice_key):
    team = cast["acme"]
    check = check_create(user=cast["alice"], text="a text")
    _read(check.id, team)
    seen: list[int] = []

    def other_thread() -> None:
        seen.append(len(precompiled._local.by_key))

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    assert seen == [0] and len(precompiled._local.by_key) == 1


def test_check_get_answers_as_the_orm_with_its_hypotheses(cast, alice_key, wm_text):
    check = check_create(user=cast["alice"], text=wm_text)
    check_score(check.id)
    got = check_get(cast["bob"], check.id)
    orm = Check.objects.prefetch_related("hypotheses").get(id=check.id)
    assert got.get_deferred_fields() == {"token_data"}
    assert _fields(got, but="token_data") == _fields(orm, but="token_data")
    with CaptureQueriesContext(connection) as queries:
        rows = list(got.hypotheses.all())
        assert [h.check_run is got for h in rows] == [True] * len(rows)
        assert got.best_key.name == alice_key.name and got.submitted_by.username == "alice"
    assert len(queries) == 0
    expected = [(h.id, h.index, h.key_id, h.log10_p) for h in orm.hypotheses.all()]
    assert [(h.id, h.index, h.key_id, h.log10_p) for h in rows] == expected and rows
