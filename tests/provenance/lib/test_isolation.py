"""The reader process: an operation answered as JSON, in a process that holds no secret."""

from __future__ import annotations

from provenance.lib import isolation
from provenance.lib.documents import Limits


def _request(name: str) -> dict:
    return {"filename": name, "limits": {"max_bytes": 1 << 20, "max_pages": 10}}


def test_a_document_is_read_in_a_reader_and_answered_as_json():
    answer = isolation.call("document", _request("a.txt"), b"Rain on the roof.", 30.0)
    assert answer["document"]["text"] == "Rain on the roof."
    assert Limits(**_request("a.txt")["limits"]).max_seconds > 0


def test_a_readers_environment_holds_only_what_it_needs():
    assert isolation._passed_on("PATH") and isolation._passed_on("LC_ALL")
    for secret in ("DJANGO_SECRET_KEY", "PROVENANCE_KEK", "REDIS_URL", "PROVENANCE_C2PA_KEY"):
        assert not isolation._passed_on(secret)
