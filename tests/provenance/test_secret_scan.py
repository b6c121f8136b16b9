"""The session-wide secret scan, ordered after every other test of the session by its
``secret_scan`` marker (tests/provenance/conftest.py): every response body, log record (with
its exception text), Celery message body and child process log that the suite's scenarios
produced (tests/provenance/capture.py), and those of its own scenario, searched for every key
value created in this process in decimal, hex and base64. The one-time answers that create a
key are the only exemption."""

from __future__ import annotations

import pytest

from provenance.checks.models import Check
from provenance.keys.models import WatermarkKey
from tests.conftest import WEB_SHARDS, group_of
from tests.provenance import capture
from tests.provenance.conftest import KEY_VALUE
from tests.waiting import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.secret_scan]


def _scenario(celery_worker, api_for, client, cast, alice_key, wm_text) -> None:
    """Enough of everything to scan even when this file runs alone."""
    alice = api_for("alice")
    check_id = alice.post("/api/v1/checks", {"text": wm_text}, format="json").json()["id"]
    audit = alice.post("/api/v1/audits", {"texts": [{"text": wm_text}]}, format="json").json()
    alice.post("/detect", {"text": wm_text}, format="json")
    alice.post("/detect", {"text": "\x00"}, format="json")  # a 4xx with its message
    wait_until(lambda: Check.objects.filter(id=check_id, status="done").exists(), 60)
    client.force_login(cast["alice"])
    for url in ("/", f"/checks/{check_id}/", "/checks/", f"/audits/{audit['id']}/", "/keys/"):
        client.get(url)
    alice.get(f"/api/v1/audits/{audit['id']}/export.json")
    # A key the worker cannot decrypt: its failure text and logs are scanned too.
    WatermarkKey.objects.filter(id=alice_key.id).update(encrypted_value=b"not a fernet token")
    broken = alice.post("/api/v1/checks", {"text": wm_text}, format="json").json()["id"]
    wait_until(lambda: Check.objects.get(id=broken).status in ("done", "failed"), 60)
    assert "decrypt" in Check.objects.get(id=broken).failure_reason


# One scan per shard of the web product's tests (tests/conftest.py): under xdist each runs last
# on its shard's worker and searches what that process produced; in one process both run.
@pytest.mark.parametrize("shard", WEB_SHARDS)
def test_nothing_the_suite_produced_shows_a_key(
    shard, celery_worker, api_for, client, cast, alice_key, wm_text
):
    _scenario(celery_worker, api_for, client, cast, alice_key, wm_text)
    values = capture.scanned(capture.key_values | {KEY_VALUE})
    assert KEY_VALUE in values
    labels = [label for label, _ in capture.texts]
    assert any(label.startswith("log ") for label in labels)
    assert any(label.startswith("celery ") for label in labels)
    assert any(" /api/v1/checks" in label for label in labels)
    assert any(" /checks/" in label for label in labels)
    found = {}
    for label, text in capture.texts:
        if hits := capture.leaks(text, values):
            found[label] = hits
    for path in capture.files:
        if path.exists() and (hits := capture.leaks(path.read_text("utf-8", "replace"), values)):
            found[str(path)] = hits
    assert not found, f"key values leaked in: {sorted(found)[:10]}"


def test_the_scan_runs_after_every_other_test(request):
    items = request.session.items
    first_scan = min(i for i, item in enumerate(items) if item.get_closest_marker("secret_scan"))
    assert all(item.get_closest_marker("secret_scan") for item in items[first_scan:])
    assert request.node in items[first_scan:]


def test_each_shard_has_its_own_scan():
    # Each scan belongs to the group (and so the worker) of the shard it searches.
    for shard in WEB_SHARDS:
        scan = "test_nothing_the_suite_produced_shows_a_key"
        assert group_of(f"tests/provenance/test_secret_scan.py::{scan}[{shard}]") == shard
    assert {
        group_of("tests/provenance/playground/test_browser.py::t"),
        group_of("tests/provenance/playground/test_embedded.py::t"),
    } == {WEB_SHARDS[0]}  # one embedded generator
    assert group_of("tests/provenance/keys/test_api.py::t") == WEB_SHARDS[1]


def test_the_scan_would_find_a_leak():
    # The scanner itself: each spelling of a key is found where it appears.
    for form in sorted(capture.forms(KEY_VALUE)):
        assert capture.leaks(f"<p>value: {form}</p>", [KEY_VALUE]), form
    assert not capture.leaks("nothing here", [KEY_VALUE])
