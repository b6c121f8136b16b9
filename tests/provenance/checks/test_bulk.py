"""provenance.checks.bulk: rows written with executemany read back exactly as the ORM's."""

from __future__ import annotations

from django.utils import timezone

from provenance.audits.models import Audit
from provenance.checks import bulk

# Equal in Python (and hashing alike, 0 to 0) yet different JSON documents.
VALUES = [0, False, 0.0, 1, True, 1.0, "1", [0], [False], [0.0], {"a": 1}, {"a": True}]


def _audits(team, n: int) -> list[Audit]:
    return [
        Audit.objects.create(team=team, request_hash="h", num_texts=1, key_ids=[], threshold=0.01)
        for _ in range(n)
    ]


def test_equal_values_of_different_types_are_stored_as_given(cast):
    audits = _audits(cast["acme"], len(VALUES))
    bulk.update_rows(Audit, ["key_ids"], [(a.id, v) for a, v in zip(audits, VALUES, strict=True)])
    stored = [Audit.objects.get(id=a.id).key_ids for a in audits]
    assert [(type(v), v) for v in stored] == [(type(v), v) for v in VALUES]
    assert [type(v[0]) for v in stored[7:10]] == [int, bool, float]
    assert stored[11] == {"a": True} and stored[11]["a"] is True


def test_a_value_repeated_across_rows_is_stored_in_every_row(cast):
    audits = _audits(cast["acme"], 3)
    now, key_ids = timezone.now(), ["k1", "k2"]  # one object each, as the services pass them
    bulk.update_rows(Audit, ["key_ids", "finished_at"], [(a.id, key_ids, now) for a in audits])
    for audit in audits:
        audit.refresh_from_db()
        assert (audit.key_ids, audit.finished_at) == (key_ids, now)


def _columns(obj) -> dict:
    row = type(obj).objects.filter(pk=obj.pk).values().get()
    return {k: v for k, v in row.items() if k not in ("id", "created_at")}


def test_a_prepared_insert_stores_what_save_stores(cast):
    from django.db import transaction

    from provenance.checks.models import Check
    from provenance.usage.models import DetectionLog
    from provenance.usage.services import detection_log_new

    user, team = cast["alice"], cast["acme"]
    fields = dict(team=team, submitted_by=user, text="t", key_ids=["k"], threshold=0.01)
    saved = Check.objects.create(**fields, token_data={"a": [0, False, 0.0]})
    prepared = Check(**fields, token_data={"a": [0, False, 0.0]})
    log = detection_log_new(
        user=user, team=team, kind="check", keys=[], num_texts=1, check=prepared, text="t"
    )
    inserts = bulk.Inserts()
    inserts.new(prepared)
    inserts.new(log)
    assert not Check.objects.filter(pk=prepared.pk).exists()  # built, not run
    with transaction.atomic():
        inserts.run()
    assert _columns(prepared) == _columns(saved)  # defaults, database defaults, JSON types
    assert prepared.claim == "" and not prepared._state.adding  # as save() leaves them
    assert Check.objects.get(pk=prepared.pk).created_at is not None  # auto_now_add
    assert DetectionLog.objects.get(check_run=prepared).username == user.username


def test_a_second_insert_of_a_model_reuses_its_statement_and_stores_the_same(cast):
    from django.db import transaction

    from provenance.checks.models import Check

    user, team = cast["alice"], cast["acme"]
    fields = dict(team=team, submitted_by=user, text="t", key_ids=["k"], threshold=0.01)
    made = []
    for text in ("first", "second"):
        check = Check(**{**fields, "text": text}, token_data={"a": [1, True, 0.5]})
        inserts = bulk.Inserts()
        inserts.new(check)
        with transaction.atomic():
            inserts.run()
        made.append((check, inserts.statements[0]))
    (first, (first_sql, _)), (second, (second_sql, second_params)) = made
    assert second_sql == first_sql
    assert len(second_params[0]) == first_sql.count("%s")
    one, two = _columns(first), _columns(second)
    assert (one.pop("text"), two.pop("text")) == ("first", "second")
    assert one == two
    assert Check.objects.get(pk=second.pk).created_at is not None  # auto_now_add, again


def test_a_value_skips_its_fields_preparation_only_where_it_would_come_back_unchanged():
    import uuid

    from django.db import connection, models

    from provenance.checks.models import Check, Status

    samples = ["text", "", 3, 2.5, 0.0, True, False, None, Status.DONE, uuid.uuid4()]
    samples += [timezone.now(), {"a": [1]}, [1, 2]]
    for field in Check._meta.local_concrete_fields:
        for value in samples:
            try:
                expected = field.get_db_prep_save(value, connection)
            except Exception:  # a value the field refuses: nothing to compare
                continue
            got = bulk._prep_save(field, value)
            # PostgreSQL's JSON adapter wraps the value (compared by what it wraps).
            same = getattr(got, "obj", got) == getattr(expected, "obj", expected)
            assert same and type(got) is type(expected), (field.name, value)
    # A value of another type than the field's own goes through the field.
    assert bulk._prep_save(models.FloatField(), 3) == 3.0
    assert type(bulk._prep_save(models.FloatField(), 3)) is float
    assert bulk._prep_save(models.CharField(), 7) == "7"
