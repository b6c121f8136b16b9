"""Audits through their services (provenance.audits.services): one Idempotency-Key sent twice at
once stores one audit."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from provenance.audits.services import audit_submit
from provenance.checks.models import Audit, Check, DetectionLog
from provenance.checks.services import check_create


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
