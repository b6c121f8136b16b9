"""An audit of uploaded files pays before any worker reads them: each staged file takes one
text of the daily quota in the request (429 at once when there is no room), and a refused
archive keeps it taken. Before, the quota was taken only after extraction, so a user with no
quota left, or one sending corrupt zips, had workers read archive after archive for free."""

from __future__ import annotations

import io

import pytest

from provenance.audits.extraction import audit_extract
from provenance.audits.models import Audit
from provenance.checks import queue
from provenance.checks.models import Upload
from provenance.usage.models import QuotaUsage
from tests.provenance import documents as make
from tests.provenance.conftest import published_tasks  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


def _archive(content: bytes) -> io.BytesIO:
    file = io.BytesIO(content)
    file.name = "batch.zip"
    return file


def _send(client, content: bytes):
    return client.post("/api/v1/audits", {"archive": _archive(content)}, format="multipart")


def test_an_archive_is_refused_before_extraction_when_the_quota_is_spent(
    api_for,
    alice_key,
    settings,
    published_tasks,  # noqa: F811
):
    settings.PROVENANCE_DAILY_QUOTA = 1
    alice = api_for("alice")
    spent = alice.post("/api/v1/checks", {"text": "one text"}, format="json")
    assert spent.status_code in (201, 202) and QuotaUsage.objects.get().used == 1
    published_tasks.clear()
    response = _send(alice, make.zipped({"a.txt": b"first", "b.txt": b"second"}))
    assert response.status_code == 429, response.content
    assert "daily quota exceeded" in response.json()["detail"]
    assert not Audit.objects.exists() and not Upload.objects.exists()
    assert queue.EXTRACT_AUDIT not in [name for name, _ in published_tasks]


def test_refused_archives_cannot_be_repeated_for_free(
    api_for,
    alice_key,
    settings,
    published_tasks,  # noqa: F811
):
    settings.PROVENANCE_DAILY_QUOTA = 3
    alice = api_for("alice")
    corrupt = b"PK\x03\x04" + b"\x00" * 200  # a zip's magic and nothing a reader accepts
    for _ in range(3):
        response = _send(alice, corrupt)
        assert response.status_code == 202, response.content
        audit_extract(response.json()["id"])  # the worker's reading: refused
    assert list(Audit.objects.values_list("status", flat=True)) == ["failed"] * 3
    assert QuotaUsage.objects.get().used == 3
    assert _send(alice, corrupt).status_code == 429  # the fourth costs what it would
    assert Audit.objects.count() == 3
