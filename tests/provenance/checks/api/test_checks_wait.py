"""POST /api/v1/checks?wait=N: a short text is scored in the request and answered with its
verdict (201); a longer one is queued as before and waited for at most N seconds."""

from __future__ import annotations

import time

import pytest
from django.db import OperationalError

from provenance.checks import queue
from provenance.checks.models import Check
from provenance.checks.services import check_score
from provenance.usage.models import DetectionLog
from tests.provenance.conftest import KEY_VALUE

# What differs between two checks of the same text, whoever scored them.
PER_ROW = {"id", "created_at", "queued_at", "started_at", "finished_at", "scoring_ms"}


@pytest.fixture
def alice(api_for):
    return api_for("alice")


def _post(client, text, wait="5", **extra):
    return client.post(f"/api/v1/checks?wait={wait}", {"text": text, **extra}, format="json")


def test_a_short_text_is_answered_201_with_its_verdict_and_never_queued(
    alice, alice_key, wm_text, published_tasks, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(alice, wm_text)
    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "done" and body["is_watermarked"] is True
    assert body["best_key"] == "acme-main" and len(body["hypotheses"]) == 1
    assert response["Location"] == f"/api/v1/checks/{body['id']}"
    assert published_tasks == []
    assert DetectionLog.objects.get().check_run_id is not None  # the audit log holds
    heatmap = alice.get(f"/api/v1/checks/{body['id']}?tokens=1").json()["heatmap"]
    assert len(heatmap["scores"]) == body["num_tokens"]


def test_an_inline_check_stores_exactly_what_the_worker_stores(alice, alice_key, wm_text):
    inline = _post(alice, wm_text).json()
    queued = _post(alice, wm_text, wait="0")
    assert queued.status_code == 202 and queued.json()["status"] == "pending"
    check_score(queued.json()["id"])  # the task body
    worker = alice.get(f"/api/v1/checks/{queued.json()['id']}?tokens=1").json()
    inline = alice.get(f"/api/v1/checks/{inline['id']}?tokens=1").json()
    assert {k: v for k, v in inline.items() if k not in PER_ROW} == {
        k: v for k, v in worker.items() if k not in PER_ROW
    }
    assert inline["started_at"] <= inline["finished_at"]


@pytest.mark.parametrize("which", ["wm_text", "human_text"])
def test_an_inline_answer_is_what_reading_the_check_back_answers(alice, alice_key, which, request):
    answer = _post(alice, request.getfixturevalue(which))
    assert answer.status_code == 201
    assert answer.json() == alice.get(f"/api/v1/checks/{answer.json()['id']}").json()


def test_a_failed_inline_answer_is_what_reading_the_check_back_answers(alice, alice_key, wm_text):
    from provenance.keys.models import WatermarkKey

    WatermarkKey.objects.filter(id=alice_key.id).update(encrypted_value=b"not a token")
    answer = _post(alice, wm_text).json()
    assert answer["status"] == "failed"
    assert answer == alice.get(f"/api/v1/checks/{answer['id']}").json()


def test_a_text_over_the_inline_limit_is_queued_and_waited_for(
    alice, alice_key, wm_text, settings, published_tasks, django_capture_on_commit_callbacks
):
    settings.PROVENANCE_INLINE_MAX_BYTES = len(wm_text.encode()) - 1
    start = time.monotonic()
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(alice, wm_text, wait="0.3")
    assert time.monotonic() - start >= 0.3  # no worker here: it waited the whole time
    assert response.status_code == 202 and response.json()["status"] == "pending"
    assert published_tasks == [(queue.SCORE_CHECK, (response.json()["id"],))]


@pytest.mark.parametrize("wait", ["soon", "-1", "31", "nan", "inf"])
def test_a_bad_wait_is_refused_and_nothing_is_stored(alice, alice_key, wait):
    response = _post(alice, "some text", wait=wait)
    assert response.status_code == 400 and "seconds from 0 to 30" in response.content.decode()
    assert not Check.objects.exists() and not DetectionLog.objects.exists()


def test_the_daily_quota_holds_for_inline_checks(alice, alice_key, wm_text, settings):
    settings.PROVENANCE_DAILY_QUOTA = 1
    assert _post(alice, wm_text).status_code == 201
    over = _post(alice, wm_text)
    assert over.status_code == 429 and "daily quota exceeded" in over.json()["detail"]
    assert Check.objects.count() == 1 and DetectionLog.objects.count() == 1


def test_an_inline_key_that_does_not_decrypt_fails_the_check_as_the_worker_does(
    alice, alice_key, wm_text
):
    from cryptography.fernet import Fernet

    from provenance.keys.models import WatermarkKey

    foreign = Fernet(Fernet.generate_key()).encrypt(str(KEY_VALUE).encode())
    WatermarkKey.objects.filter(id=alice_key.id).update(encrypted_value=foreign)
    response = _post(alice, wm_text)
    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "failed" and "does not decrypt" in body["failure_reason"]
    assert str(KEY_VALUE) not in response.content.decode()


def test_a_database_failure_while_storing_inline_answers_503_and_stores_nothing(
    alice, alice_key, wm_text, monkeypatch
):
    from provenance.checks import bulk

    run = bulk.Inserts.run

    def locked(self):  # fault injection: a write after the rows were inserted
        run(self)
        assert Check.objects.exists()  # inside the transaction, before the failure
        raise OperationalError("database is locked")

    monkeypatch.setattr(bulk.Inserts, "run", locked)
    response = _post(alice, wm_text)
    assert response.status_code == 503
    assert not Check.objects.exists() and not DetectionLog.objects.exists()


def test_a_check_a_model_may_read_is_answered_at_once_with_its_model_free_verdict(
    alice, alice_key, wm_text, settings, published_tasks, django_capture_on_commit_callbacks
):
    """Reading on (adaptive): the model-free stage answers in the request; a text it decides
    is final (reading "none") and nothing is queued (tests/provenance/checks/api/
    test_checks_reading.py follows an undecided one to its reading)."""
    settings.PROVENANCE_MODEL_ASSIST, settings.PROVENANCE_ASSIST_MAX_TOKENS = "adaptive", 2048
    assert alice_key.tokenizer.model_path  # the embedded tokenizer comes with its model
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(alice, wm_text, wait="0.1")
    assert response.status_code == 201 and response.json()["status"] == "done"
    assert response.json()["reading"] == "none" and response.json()["is_watermarked"]
    assert published_tasks == []
