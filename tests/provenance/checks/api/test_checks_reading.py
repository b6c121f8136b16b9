"""The progressive answer: a check the model-free stage leaves undecided is answered at once
with that verdict and ``reading: "pending"``; a worker reads it and stores the final decision
(``reading: "done"``), which ``GET ?wait=``, the result page and reports then give. A check
the model-free stage decides is never read."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from provenance.checks import queue
from provenance.checks.models import Check
from provenance.checks.services import check_read, check_score
from tests.detector.decision.test_adaptive import FakeReader


@pytest.fixture
def reader(settings, monkeypatch):
    """Reading on, the embedded tokenizer's model standing in for a reading computed from the
    text alone (no forward pass: the model-marked tests run the real one)."""
    from provenance.scoring import service

    settings.PROVENANCE_MODEL_ASSIST, settings.PROVENANCE_ASSIST_MAX_TOKENS = "adaptive", 4096
    fake = FakeReader()
    monkeypatch.setattr(service, "assist_for", lambda tokenizer: fake)
    return fake


@pytest.fixture
def alice_client(client, cast):
    client.force_login(cast["alice"])
    return client


@pytest.fixture
def alice(api_for):
    return api_for("alice")


def _post(client, text, wait="5"):
    return client.post(f"/api/v1/checks?wait={wait}", {"text": text}, format="json")


def test_an_undecided_check_is_answered_pending_then_read_and_final(
    alice, alice_key, human_text, reader, published_tasks, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        first = _post(alice, human_text)
    body = first.json()
    assert first.status_code == 201 and body["status"] == "done"
    assert body["reading"] == "pending" and body["verdict"] == "inconclusive"
    assert published_tasks == [(queue.READ_CHECK, (body["id"],))]
    assert reader.asked == []  # nothing read in the request
    (h,) = body["hypotheses"]
    assert h["weighted_log10_p"] is None
    check_read(body["id"])  # the task body, on a worker
    final = alice.get(f"/api/v1/checks/{body['id']}?tokens=1").json()
    assert final["reading"] == "done" and len(reader.asked) == 1
    (h,) = final["hypotheses"]
    assert h["weighted_log10_p"] is not None
    assert final["heatmap"]["chart"] and len(final["heatmap"]["scores"]) == final["num_tokens"]
    row = Check.objects.get(id=body["id"])
    assert row.reading_ms is not None and row.hypotheses.count() == 1
    check_read(body["id"])  # a second delivery reads nothing and stores nothing
    assert len(reader.asked) == 1


def test_a_check_the_model_free_stage_decides_is_never_read(
    alice, alice_key, wm_text, reader, published_tasks, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        answer = _post(alice, wm_text).json()
    assert answer["verdict"] == "watermarked" and answer["reading"] == "none"
    assert published_tasks == []
    check_read(answer["id"])  # even a stray reading task reads nothing
    # the worker's path (a longer text, or no ?wait=) decides it the same way, unread
    queued = _post(alice, wm_text, wait="0").json()
    check_score(queued["id"])
    worker = alice.get(f"/api/v1/checks/{queued['id']}").json()
    assert worker["verdict"] == "watermarked" and worker["reading"] == "none"
    assert reader.asked == []


def test_the_worker_path_reads_an_undecided_check_in_one_go(
    alice, alice_key, human_text, reader, published_tasks
):
    queued = _post(alice, human_text, wait="0").json()
    check_score(queued["id"])
    done = alice.get(f"/api/v1/checks/{queued['id']}").json()
    assert done["reading"] == "done" and len(reader.asked) == 1
    # the same final decision as the progressive path's
    first = _post(alice, human_text).json()
    check_read(first["id"])
    final = alice.get(f"/api/v1/checks/{first['id']}").json()
    for field in ("verdict", "p_value", "log10_p", "decided_by", "reading"):
        assert final[field] == done[field]


@pytest.mark.django_db(transaction=True)
def test_get_with_wait_wakes_on_the_final_answer(
    api_for, alice_key, human_text, reader, published_tasks
):
    alice = api_for("alice")
    body = _post(alice, human_text).json()
    assert body["reading"] == "pending"
    now = alice.get(f"/api/v1/checks/{body['id']}").json()
    assert now["reading"] == "pending"  # without ?wait=: as it stands

    def later():
        time.sleep(0.5)
        check_read(body["id"])

    thread = threading.Thread(target=later)
    thread.start()
    start = time.monotonic()
    final = alice.get(f"/api/v1/checks/{body['id']}?wait=10").json()
    thread.join()
    assert final["reading"] == "done" and time.monotonic() - start < 5


def test_the_result_page_shows_pending_then_the_final_verdict(
    alice_client, alice_key, human_text, reader, published_tasks
):
    answer = alice_client.post("/", {"text": human_text})
    check_id = answer["Location"].rstrip("/").split("/")[-1]
    page = alice_client.get(f"/checks/{check_id}/").content.decode()
    assert 'data-reading="pending"' in page and 'id="reading-pending"' in page
    assert f'data-poll="/api/v1/checks/{check_id}"' in page  # the script waits on it
    assert '<meta http-equiv="refresh"' not in page  # the verdict is there: no reload
    report = alice_client.get(f"/api/v1/checks/{check_id}/report")
    assert report.status_code == 409  # never a report of a pending decision
    check_read(check_id)
    page = alice_client.get(f"/checks/{check_id}/").content.decode()
    assert 'data-reading="done"' in page and 'id="reading-done"' in page
    assert 'id="reading-pending"' not in page


def test_a_reading_that_cannot_be_taken_leaves_the_model_free_verdict_marked(
    alice, alice_key, human_text, settings, monkeypatch, published_tasks
):
    from provenance.scoring import service

    settings.PROVENANCE_MODEL_ASSIST = "adaptive"
    body = _post(alice, human_text).json()
    assert body["reading"] == "pending"
    monkeypatch.setattr(service, "assist_for", lambda tokenizer: None)  # the model is gone
    check_read(body["id"])
    final = alice.get(f"/api/v1/checks/{body['id']}").json()
    assert final["reading"] == "skipped"
    assert (final["verdict"], final["log10_p"]) == (body["verdict"], body["log10_p"])


def test_a_worker_without_the_reading_leaves_the_model_free_verdict_marked(
    alice, alice_key, human_text, reader, settings, published_tasks
):
    """A reading task taken by a worker with assistance off stores no decision of its own:
    the model-free verdict (its reading's share set aside) stands, marked "skipped"."""
    body = _post(alice, human_text).json()
    assert body["reading"] == "pending"
    settings.PROVENANCE_MODEL_ASSIST = False
    check_read(body["id"])
    final = alice.get(f"/api/v1/checks/{body['id']}").json()
    assert final["reading"] == "skipped" and reader.asked == []
    assert (final["verdict"], final["log10_p"]) == (body["verdict"], body["log10_p"])


def test_the_reading_is_off_where_model_assistance_is_off(alice, alice_key, human_text, settings):
    settings.PROVENANCE_MODEL_ASSIST = False
    body = _post(alice, human_text).json()
    assert body["reading"] == "none"
    assert np.isclose(body["log10_p"], body["hypotheses"][0]["decision_log10_p"])


def test_the_cli_with_the_same_reading_gives_the_final_verdict_the_api_gives(
    alice, alice_key, human_text, reader, monkeypatch, tmp_path, capsys
):
    """One voice: ``python -m detector detect --model`` makes the adaptive decision with the
    same reading and answers the verdict and p-value the API's final answer holds."""
    import json

    from detector.cli.main import main
    from detector.reading import choice
    from tests.provenance.conftest import KEY_VALUE

    body = _post(alice, human_text).json()
    check_read(body["id"])
    final = alice.get(f"/api/v1/checks/{body['id']}").json()
    monkeypatch.setattr(choice, "load_reading", lambda model_dir, name: reader)
    path = tmp_path / "text.txt"
    path.write_text(human_text, encoding="utf-8")
    assert main(["detect", "--key", str(KEY_VALUE), "--model", str(tmp_path), str(path)]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert cli["reading"] == final["reading"] == "done"
    assert cli["verdict"] == final["verdict"]
    assert cli["log10_p"] == pytest.approx(final["log10_p"], abs=1e-9)
    assert cli["hypotheses"][0]["weighted_log10_p"] == pytest.approx(
        final["hypotheses"][0]["weighted_log10_p"], abs=1e-9
    )
