"""Checks through their services (scoring called in-process here; the worker
tests run the same path through Celery)."""

from __future__ import annotations

import math

import pytest

from detector.decision.text import detect_text
from detector.evidence.localize import GAMMA_SHARE
from detector.text.tokenizers import load_tokenizer
from provenance.audits.services import audit_submit
from provenance.checks.models import Check
from provenance.checks.selectors import queue_notice
from provenance.checks.services.checks import check_create, check_score
from provenance.errors import PayloadTooLarge, ProblemError
from provenance.keys.services import key_create, key_retire
from provenance.lib import heatmap
from tests.provenance.conftest import KEY_VALUE
from tests.provenance.watermark import watermarked_text


def _scored(user, text, **kwargs) -> Check:
    check = check_create(user=user, text=text, **kwargs)
    check_score(check.id)
    check.refresh_from_db()
    return check


def test_a_watermarked_text_is_flagged_with_the_matching_key(cast, alice_key, wm_text):
    check = _scored(cast["alice"], wm_text)
    assert check.status == "done" and check.is_watermarked
    assert check.best_key_id == alice_key.id
    assert check.log10_p < -20 and check.num_hypotheses == 1
    expected = detect_text(wm_text, load_tokenizer("default"), [KEY_VALUE])
    assert check.num_scored_tokens == expected.hypotheses[0].detection.num_scored_tokens
    # the verdict is the library's decision: the global test and the span scan, weighted
    # Bonferroni (the Gamma test at GAMMA_SHARE of the level)
    assert check.log10_p == pytest.approx(expected.log10_p)
    global_test = expected.hypotheses[0].detection
    assert check.log10_p == pytest.approx(global_test.log10_p - math.log10(GAMMA_SHARE))


def test_a_human_text_is_not_flagged(cast, alice_key, human_text):
    check = _scored(cast["alice"], human_text)
    assert check.status == "done" and check.is_watermarked is False
    assert check.log10_p > -2


def test_the_verdict_is_holm_corrected_over_every_usable_key(
    cast, alice_key, tokenizer_row, wm_text
):
    for i in range(3):
        key_create(name=f"extra-{i}", team=cast["acme"], tokenizer=tokenizer_row)
    check = _scored(cast["alice"], wm_text)
    rows = list(check.hypotheses.order_by("index"))
    assert check.num_hypotheses == 4 and len(rows) == 4
    best = min(rows, key=lambda row: row.adjusted_log10_p)
    assert best.key_id == alice_key.id
    # document p = the global p / GAMMA_SHARE here (the scan is weaker on a fully watermarked
    # text), times 4 hypotheses
    assert best.adjusted_log10_p == pytest.approx(best.log10_p + math.log10(4 / GAMMA_SHARE))
    # Holm steps down: every other key's adjusted p is at least the best one's. (Not at least
    # its own global p: a key's document p is 2 x min(global, scan), below the global p when
    # its scan is the stronger test.)
    assert all(row.adjusted_log10_p >= best.adjusted_log10_p for row in rows)


def test_a_retired_key_still_detects_old_text(cast, alice_key, wm_text):
    key_retire(key=alice_key)
    assert _scored(cast["alice"], wm_text).is_watermarked


def test_narrowing_to_one_key_tests_only_that_hypothesis(cast, alice_key, tokenizer_row, wm_text):
    key_create(name="other-key", team=cast["acme"], tokenizer=tokenizer_row)
    check = _scored(cast["alice"], wm_text, key_ids=[alice_key.id])
    assert check.num_hypotheses == 1 and check.key_ids == [str(alice_key.id)]


def test_the_heatmap_has_one_entry_per_token_with_offsets_into_the_text(cast, alice_key, wm_text):
    check = _scored(cast["alice"], wm_text)
    data = check.token_data
    assert len(data["offsets"]) == len(data["scores"]) == len(data["scored"]) == check.num_tokens
    assert sum(data["scored"]) == check.num_scored_tokens
    _, offsets = load_tokenizer("default").encode_with_offsets(wm_text)
    assert data["offsets"] == offsets.tolist()
    global_log10_p = check.hypotheses.get().log10_p  # the chart is the global test's evidence
    assert data["chart"][-1][1] == pytest.approx(global_log10_p, abs=1e-2)


def test_the_stored_compact_heatmap_decodes_to_the_same_tokens_and_scores(cast, alice_key, wm_text):
    check = _scored(cast["alice"], wm_text)
    data, compact = check.token_data, check.heatmap_compact
    assert compact == heatmap.compact(data) and compact["context_width"] == data["context_width"]
    numbers = [int(n) for n in compact["tokens"].split(",")]
    cursor, offsets, scores = 0, [], []
    for gap, length, score in zip(numbers[0::3], numbers[1::3], numbers[2::3], strict=True):
        offsets.append([cursor + gap, cursor + gap + length])
        cursor += gap + length
        scores.append(score)
    assert offsets == data["offsets"]
    assert scores == [
        round(s * 100) if m else -1 for s, m in zip(data["scores"], data["scored"], strict=True)
    ]


def test_repeated_contexts_are_marked_as_skipped(cast, alice_key):
    check = _scored(cast["alice"], "the cat sat on the mat. " * 12)
    assert 0 < check.num_scored_tokens < check.num_tokens
    assert not all(check.token_data["scored"])


def test_scoring_twice_is_idempotent(cast, alice_key, wm_text):
    check = _scored(cast["alice"], wm_text)
    check_score(check.id)
    assert check.hypotheses.count() == 1


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ("", ProblemError, "empty"),
        ("   \n\t", ProblemError, "empty"),
        ("bad \ud800 text", ProblemError, "UTF-8"),
        ("nul \x00 char", ProblemError, "NUL"),
        (None, ProblemError, "string"),
    ],
)
def test_bad_text_is_refused_and_nothing_is_stored(cast, alice_key, text, error, message):
    with pytest.raises(error, match=message):
        check_create(user=cast["alice"], text=text)
    assert Check.objects.count() == 0


def test_a_text_over_the_size_limit_is_refused(cast, alice_key, settings):
    settings.PROVENANCE_MAX_TEXT_BYTES = 1000
    with pytest.raises(PayloadTooLarge):
        check_create(user=cast["alice"], text="é" * 501)
    assert Check.objects.count() == 0


def test_a_user_without_a_team_cannot_check(db, alice_key):
    from provenance.accounts.services import user_create

    loner = user_create(username="loner", password="loner-pass-123")
    with pytest.raises(ProblemError) as info:
        check_create(user=loner, text="hello")
    assert info.value.status_code == 403


def test_watermarked_text_helper_retokenizes_to_ids_that_still_detect():
    text = watermarked_text(KEY_VALUE, num_tokens=120, seed=5)
    result = detect_text(text, load_tokenizer("default"), [KEY_VALUE])
    assert result.is_watermarked and result.log10_p < -20
    assert not detect_text(text, load_tokenizer("default"), [KEY_VALUE ^ 1]).is_watermarked


def test_a_key_that_does_not_decrypt_fails_the_check_without_leaking(cast, alice_key, wm_text):
    from cryptography.fernet import Fernet

    from provenance.keys.models import WatermarkKey

    foreign = Fernet(Fernet.generate_key()).encrypt(str(KEY_VALUE).encode())
    WatermarkKey.objects.filter(id=alice_key.id).update(encrypted_value=foreign)
    check = _scored(cast["alice"], wm_text)
    assert check.status == "failed" and "does not decrypt" in check.failure_reason
    assert str(KEY_VALUE) not in check.failure_reason


def _items(*texts):
    return [{"client_id": f"doc-{i}", "text": t} for i, t in enumerate(texts)]


def test_a_task_that_fails_for_good_marks_its_rows_failed(cast, alice_key, wm_text):
    from provenance.audits.tasks import audit_score_chunk_task
    from provenance.checks.tasks import check_score_task

    check = check_create(user=cast["alice"], text=wm_text)
    check_score_task.on_failure(RuntimeError("boom"), "task-id", (check.id,), {}, None)
    check.refresh_from_db()
    assert check.status == "failed" and "RuntimeError" in check.failure_reason
    audit, _ = audit_submit(user=cast["alice"], texts=_items("one", "two"))
    ids = list(audit.checks.values_list("id", flat=True))
    audit_score_chunk_task.on_failure(RuntimeError("boom"), "t", (audit.id, ids), {}, None)
    audit.refresh_from_db()
    assert audit.status == "done" and audit.checks.filter(status="failed").count() == 2


def test_a_broker_outage_keeps_the_new_check_pending_and_says_so(
    cast, alice_key, monkeypatch, django_capture_on_commit_callbacks
):
    from kombu.exceptions import OperationalError

    from provenance.celery import app

    def unavailable(*args, **kwargs):  # fault injection: the broker refuses the message
        raise OperationalError("connection refused")

    monkeypatch.setattr(app, "send_task", unavailable)
    with django_capture_on_commit_callbacks(execute=True):
        check = check_create(user=cast["alice"], text="some text")
    check.refresh_from_db()
    assert check.status == "pending" and check.queued_at is None
    assert "waits as pending" in queue_notice(check)


MIT_PARAGRAPH = (
    "Permission is hereby granted, free of charge, to any person obtaining a copy of this "
    'software and associated documentation files (the "Software"), to deal in the Software '
    "without restriction, including without limitation the rights to use, copy, modify, merge, "
    "publish, distribute, sublicense, and/or sell copies of the Software."
)


def test_scoring_leaves_the_pairs_common_in_human_text_unscored(cast, alice_key):
    check = _scored(cast["alice"], MIT_PARAGRAPH)
    tok = load_tokenizer("default")
    ours = detect_text(MIT_PARAGRAPH, tok, [KEY_VALUE]).hypotheses[0].detection
    plain = detect_text(MIT_PARAGRAPH, tok, [KEY_VALUE], common_ngrams=False)
    assert tok.ngram_table is not None and ours.num_common_tokens > 20
    assert check.num_scored_tokens == ours.num_scored_tokens
    assert ours.num_scored_tokens < plain.hypotheses[0].detection.num_scored_tokens
