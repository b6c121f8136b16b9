"""Audits through their services (provenance.audits.services): every text scored and the audit
finished, a bad text or an oversized batch refused with nothing stored, the Idempotency-Key
(replays, per team, sent twice at once), and the batched path equal to the single-text one."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from provenance.audits.models import Audit
from provenance.audits.services import audit_score_chunk, audit_submit
from provenance.checks.models import Check
from provenance.checks.services import check_create
from provenance.errors import Conflict, PayloadTooLarge, ProblemError
from provenance.keys.services import key_create
from provenance.usage.models import DetectionLog


def _pending(cast, text: str) -> Check:
    return check_create(user=cast["alice"], text=text)


@pytest.mark.django_db(transaction=True)
def test_one_idempotency_key_sent_twice_at_once_stores_one_audit(
    quiet_redis, cast, alice_key, human_text
):
    texts = [{"client_id": str(i), "text": f"{human_text} {i}"} for i in range(20)]
    got: list = []
    start = threading.Barrier(4)

    def submit() -> None:
        start.wait()
        try:
            audit, created = audit_submit(user=cast["alice"], texts=texts, idempotency_key="k1")
            got.append((audit.id, created))
        finally:
            connection.close()

    threads = [threading.Thread(target=submit) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({audit_id for audit_id, _ in got}) == 1 and len(got) == 4
    assert sum(created for _, created in got) == 1
    assert Audit.objects.count() == 1 and Check.objects.count() == 20
    assert sum(DetectionLog.objects.values_list("num_texts", flat=True)) == 20


def _items(*texts):
    return [{"client_id": f"doc-{i}", "text": t} for i, t in enumerate(texts)]


def test_an_audit_scores_every_text_and_finishes(cast, alice_key, wm_text, human_text):
    audit, created = audit_submit(user=cast["alice"], texts=_items(wm_text, human_text))
    ids = list(audit.checks.values_list("id", flat=True))
    audit_score_chunk(audit.id, ids)
    audit.refresh_from_db()
    verdicts = dict(audit.checks.values_list("client_id", "is_watermarked"))
    assert created and audit.status == "done"
    assert verdicts == {"doc-0": True, "doc-1": False}


def test_an_audit_with_one_bad_text_stores_nothing(cast, alice_key, wm_text):
    with pytest.raises(ProblemError, match=r"texts\[1\]"):
        audit_submit(user=cast["alice"], texts=_items(wm_text, ""))
    assert Audit.objects.count() == 0 and Check.objects.count() == 0


def test_an_audit_over_the_batch_limit_is_refused(cast, alice_key, settings):
    settings.PROVENANCE_MAX_AUDIT_TEXTS = 3
    with pytest.raises(PayloadTooLarge):
        audit_submit(user=cast["alice"], texts=_items("a", "b", "c", "d"))
    assert Audit.objects.count() == 0


def test_a_replayed_idempotency_key_returns_the_first_audit(cast, alice_key):
    first, created = audit_submit(user=cast["alice"], texts=_items("a b c"), idempotency_key="k1")
    again, created_again = audit_submit(
        user=cast["bob"], texts=_items("a b c"), idempotency_key="k1"
    )
    assert created and not created_again and again.id == first.id
    with pytest.raises(Conflict):
        audit_submit(user=cast["alice"], texts=_items("other"), idempotency_key="k1")
    assert Audit.objects.count() == 1


def test_idempotency_keys_are_per_team(cast, alice_key, tokenizer_row):
    key_create(name="c", team=cast["other"], tokenizer=tokenizer_row)
    mine, _ = audit_submit(user=cast["alice"], texts=_items("x y"), idempotency_key="same")
    theirs, created = audit_submit(
        user=cast["charlie"], texts=_items("x y"), idempotency_key="same"
    )
    assert created and theirs.id != mine.id


def test_the_batched_audit_path_matches_the_single_text_path(
    cast, alice_key, tokenizer_row, wm_text, human_text
):
    from detector.text.tokenizers import embedded_gguf_path
    from provenance.keys.selectors import prepare_keys
    from provenance.keys.services import tokenizer_register
    from provenance.scoring.service import score_text, score_texts

    gguf = tokenizer_register(
        name="gguf", source_kind="gguf", source_path=str(embedded_gguf_path())
    )
    dual, _ = key_create(
        name="dual", team=cast["acme"], tokenizer=gguf, algorithm="dual_key_gumbel"
    )
    plain, _ = key_create(name="plain", team=cast["acme"], tokenizer=tokenizer_row)
    groups = prepare_keys([alice_key, dual, plain])
    assert len(groups) == 2
    texts = [wm_text, human_text, "the cat sat on the mat. " * 5, wm_text[:200]]
    batched = score_texts(texts, groups, threshold=0.01)
    for text, got in zip(texts, batched, strict=True):
        one = score_text(text, groups, threshold=0.01, with_tokens=False)
        assert (got.best, got.is_watermarked) == (one.best, one.is_watermarked)
        assert got.log10_p == pytest.approx(one.log10_p)
        assert [h.key.id for h in got.hypotheses] == [h.key.id for h in one.hypotheses]
        assert [h.adjusted_log10_p for h in got.hypotheses] == pytest.approx(
            [h.adjusted_log10_p for h in one.hypotheses]
        )
    assert batched[0].is_watermarked and batched[0].hypotheses[batched[0].best].key == alice_key
