"""A check as an export row (provenance.checks.exports), the one row of a check's CSV and of
an audit's CSV and JSON."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from provenance.checks.exports import export_row, hypothesis_rows, longest_span
from provenance.checks.fields import EXPORT_FIELDS, HYPOTHESIS_EXPORT
from provenance.checks.models import Check

pytestmark = pytest.mark.django_db


def _check(cast, alice_key, **values) -> Check:
    defaults = {"team": cast["acme"], "text": "t", "key_ids": [str(alice_key.id)]}
    return Check.objects.create(**{**defaults, "threshold": 0.01, **values})


def test_a_row_has_the_export_fields_in_order_and_is_json(cast, alice_key):
    spans = [
        {"start_char": 5, "end_char": 9},
        {"start_char": 20, "end_char": 60},
    ]
    check = _check(
        cast,
        alice_key,
        client_id="doc-1",
        status="done",
        p_value=1e-9,
        best_key=alice_key,
        spans=spans,
        finished_at=timezone.now(),
        key_measured_fpr={"above_threshold": True},
    )
    row = export_row(Check.objects.select_related("best_key").get(id=check.id))
    assert list(row) == list(EXPORT_FIELDS)
    assert row["check_id"] == str(check.id) and row["client_id"] == "doc-1"
    assert row["best_key"] == alice_key.name and row["key_fpr_above_threshold"] is True
    assert (row["num_spans"], row["longest_span_start_char"], row["longest_span_end_char"]) == (
        2,
        20,
        60,
    )
    assert row["created_at"].endswith("Z") and row["finished_at"].endswith("Z")
    assert json.loads(json.dumps(row)) == row


def test_a_pending_check_has_empty_results(cast, alice_key):
    row = export_row(_check(cast, alice_key))
    assert row["status"] == "pending" and row["best_key"] is None
    assert row["key_fpr_above_threshold"] is None and row["finished_at"] is None
    assert row["num_spans"] == 0 and row["longest_span_start_char"] is None


def test_hypothesis_rows_repeat_the_check_row_once_per_hypothesis():
    row = {"check_id": "c", "p_value": 0.5}
    hypotheses = [{"index": 0, "p_value": 0.1}, {"index": 1, "p_value": 0.2}]
    rows = list(hypothesis_rows(row, hypotheses))
    assert [(r["hypothesis"], r["hypothesis_p_value"], r["p_value"]) for r in rows] == [
        (0, 0.1, 0.5),
        (1, 0.2, 0.5),
    ]
    (alone,) = hypothesis_rows(row, [])
    assert alone["check_id"] == "c" and all(alone[c] is None for c in HYPOTHESIS_EXPORT)


def test_the_longest_span_is_the_widest_in_characters():
    spans = [{"start_char": 0, "end_char": 10}, {"start_char": 50, "end_char": 51}]
    assert longest_span(spans)["longest_span_end_char"] == 10
    assert longest_span([]) == {
        "num_spans": 0,
        "longest_span_start_char": None,
        "longest_span_end_char": None,
    }
