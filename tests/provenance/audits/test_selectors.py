"""Reads of audits: team-scoped, counts by status and verdict, items in submission order with
deleted ones left out, filtered and sorted as the page asks, the export rows, the progress,
and the notice while the broker is down."""

from __future__ import annotations

import pytest
from django.http import Http404
from django.utils import timezone

from provenance.audits.models import Audit
from provenance.audits.selectors import (
    AUDIT_WAITING,
    audit_counts,
    audit_export_rows,
    audit_get,
    audit_items,
    audit_log10_ps,
    audit_progress,
    audit_queue_notice,
    audits_for_user,
    results_query,
)
from provenance.audits.services import audit_score_chunk, audit_submit
from provenance.checks.models import Check, Status
from provenance.errors import ProblemError


@pytest.fixture
def audit(cast, alice_key, wm_text, human_text):
    texts = [
        {"client_id": "wm", "text": wm_text},
        {"client_id": "human", "text": human_text},
        {"client_id": "later", "text": "a third text, left pending"},
    ]
    audit, _ = audit_submit(user=cast["alice"], texts=texts)
    scored = Check.objects.filter(audit=audit).exclude(client_id="later")
    audit_score_chunk(audit.id, [str(i) for i in scored.values_list("id", flat=True)])
    return audit


def test_an_audit_is_seen_by_its_team_only(cast, audit):
    assert list(audits_for_user(cast["bob"])) == [audit]
    assert audit_get(cast["bob"], audit.id) == audit
    assert list(audits_for_user(cast["charlie"])) == []
    with pytest.raises(Http404):
        audit_get(cast["charlie"], audit.id)
    Audit.objects.filter(id=audit.id).update(deleted_at=timezone.now())
    with pytest.raises(Http404):
        audit_get(cast["alice"], audit.id)


def test_counts_are_by_status_and_three_way_verdict(audit):
    assert audit_counts(audit) == {
        "done": 2,
        "failed": 0,
        "open": 1,
        "watermarked": 1,
        "not_watermarked": 0,
        "inconclusive": 1,
    }
    Check.objects.filter(audit=audit, client_id="later").update(status=Status.FAILED)
    assert audit_counts(audit)["failed"] == 1 and audit_counts(audit)["open"] == 0


def test_items_keep_their_order_and_a_deleted_one_is_left_out(audit):
    assert [c.client_id for c in audit_items(audit)] == ["wm", "human", "later"]
    Check.objects.filter(audit=audit, client_id="human").update(deleted_at=timezone.now())
    assert [c.client_id for c in audit_items(audit)] == ["wm", "later"]
    assert audit_counts(audit)["done"] == 1
    rows = list(audit_export_rows(audit))
    assert [r["client_id"] for r in rows] == ["wm", "later"]
    assert rows[0]["is_watermarked"] is True and rows[0]["best_key"] == "acme-main"


def test_the_notice_says_when_texts_wait_for_the_broker(audit):
    Check.objects.filter(audit=audit).update(queued_at=timezone.now())
    assert audit_queue_notice(audit) == ""
    Check.objects.filter(audit=audit, client_id="later").update(queued_at=None)
    assert audit_queue_notice(audit) == AUDIT_WAITING


def test_items_filter_by_verdict_as_the_counts_count(audit):
    assert [c.client_id for c in audit_items(audit, "watermarked")] == ["wm"]
    assert [c.client_id for c in audit_items(audit, "inconclusive")] == ["human"]
    assert [c.client_id for c in audit_items(audit, "open")] == ["later"]
    assert list(audit_items(audit, "failed")) == []


def test_items_sort_with_unscored_texts_last_both_ways(audit):
    assert [c.client_id for c in audit_items(audit, sort="p_value")] == ["wm", "human", "later"]
    assert [c.client_id for c in audit_items(audit, sort="-p_value")] == ["human", "wm", "later"]
    assert [c.client_id for c in audit_items(audit, sort="-name")] == ["wm", "later", "human"]
    assert [c.client_id for c in audit_items(audit, sort="-position")] == ["later", "human", "wm"]
    assert [c.client_id for c in audit_items(audit, sort="verdict")] == ["wm", "human", "later"]


def test_query_parameters_are_read_leniently_or_strictly():
    assert results_query({"verdict": "failed", "sort": "-scored"}) == ("failed", "-scored")
    assert results_query({"verdict": "nope", "sort": "--name"}) == ("", "")
    with pytest.raises(ProblemError, match="verdict must be one of"):
        results_query({"verdict": "nope"}, strict=True)
    with pytest.raises(ProblemError, match="sort must be one of"):
        results_query({"sort": "colour"}, strict=True)


def test_the_progress_counts_what_finished_and_the_chart_reads_the_scored(audit):
    audit = Audit.objects.get(id=audit.id)  # as the page reads it
    progress = audit_progress(audit)
    assert (progress["total"], progress["finished"], progress["status"]) == (3, 2, "running")
    assert progress["remaining_s"] == pytest.approx(progress["elapsed_s"] / 2, abs=0.1)
    assert len(audit_log10_ps(audit)) == 2 and min(audit_log10_ps(audit)) < -10
