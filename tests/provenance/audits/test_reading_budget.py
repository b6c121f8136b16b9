"""An audit reads the texts its model-free decision leaves undecided within its team's daily
budget of reading seconds (PROVENANCE_AUDIT_READING_SECONDS); past it a text keeps its
model-free verdict, marked "skipped", and the audit's page says how many were read."""

from __future__ import annotations

import json

import pytest

from provenance.audits.selectors import audit_reading
from provenance.audits.services import audit_score_chunk, audit_submit, reading_spent_today
from provenance.checks.models import Check
from tests.detector.decision.test_adaptive import FakeReader


@pytest.fixture
def reader(settings, monkeypatch):
    from provenance.scoring import service

    settings.PROVENANCE_MODEL_ASSIST, settings.PROVENANCE_ASSIST_MAX_TOKENS = "adaptive", 100_000
    fake = FakeReader()
    monkeypatch.setattr(service, "assist_for", lambda tokenizer: fake)
    return fake


def _audit(cast, *texts):
    items = [{"client_id": f"doc-{i}", "text": t} for i, t in enumerate(texts)]
    audit, _ = audit_submit(user=cast["alice"], texts=items)
    audit_score_chunk(audit.id, list(audit.checks.values_list("id", flat=True)))
    return audit


def _readings(audit):
    return dict(Check.objects.filter(audit=audit).values_list("client_id", "reading"))


def test_an_audit_reads_only_its_undecided_texts_within_the_budget(
    cast, alice_key, wm_text, human_text, reader, settings
):
    settings.PROVENANCE_AUDIT_READING_SECONDS = 600
    audit = _audit(cast, wm_text, human_text, human_text + " Again.")
    assert _readings(audit) == {"doc-0": "none", "doc-1": "done", "doc-2": "done"}
    assert len(reader.asked) == 2  # the watermarked text was decided without the model
    shown = audit_reading(audit)
    assert shown["read"] == 2 and shown["skipped"] == 0 and shown["budget"] == 600
    spent = reading_spent_today(audit.team_id)
    assert spent > 0 and shown["team_today"] == pytest.approx(spent, abs=0.1)
    assert shown["seconds"] == pytest.approx(spent, abs=0.1)


def test_past_the_budget_a_text_keeps_its_model_free_verdict_marked_skipped(
    cast, alice_key, wm_text, human_text, reader, settings, client
):
    # room for one 160-token reading at the estimated 4 ms a token, not two
    settings.PROVENANCE_AUDIT_READING_SECONDS = 1
    audit = _audit(cast, wm_text, human_text, human_text + " Again.")
    got = _readings(audit)  # texts are taken in the chunk's order (the checks' ids)
    assert got["doc-0"] == "none"
    assert sorted([got["doc-1"], got["doc-2"]]) == ["done", "skipped"]
    (name,) = [n for n, r in got.items() if r == "skipped"]
    skipped = Check.objects.get(audit=audit, client_id=name)
    assert skipped.verdict == "inconclusive" and skipped.status == "done"
    assert not skipped.hypotheses.get().weighted_log10_p
    client.force_login(cast["alice"])
    page = client.get(f"/audits/{audit.id}/").content.decode()
    assert 'id="model-reading"' in page and "1 texts" in page
    body = client.get(f"/api/v1/audits/{audit.id}/items").json()
    assert {item["client_id"]: item["reading"] for item in body["results"]} == _readings(audit)
    streamed = client.get(f"/api/v1/audits/{audit.id}/export.json")
    export = json.loads(b"".join(streamed.streaming_content))
    rows = export if isinstance(export, list) else export["results"]
    assert {row["client_id"]: row["reading"] for row in rows} == _readings(audit)


def test_no_budget_no_reading(cast, alice_key, human_text, reader, settings):
    settings.PROVENANCE_AUDIT_READING_SECONDS = 0
    audit = _audit(cast, human_text)
    assert _readings(audit) == {"doc-0": "skipped"} and reader.asked == []
