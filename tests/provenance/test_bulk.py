"""provenance.checks.bulk: rows written with executemany read back exactly as the ORM's."""

from __future__ import annotations

from django.utils import timezone

from provenance.checks import bulk
from provenance.checks.models import Audit

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
