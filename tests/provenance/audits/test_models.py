"""An audit row (the audits app's, on the table the checks app created): its checks and
uploads belong to it and go with it; the detection log keeps its entry."""

from __future__ import annotations

import pytest
from django.db import IntegrityError

from provenance.audits.models import Audit
from provenance.checks.models import Check, Upload
from provenance.usage.models import DetectionLog


def _audit(cast, key: str = "") -> Audit:
    return Audit.objects.create(
        team=cast["acme"],
        submitted_by=cast["alice"],
        idempotency_key=key,
        request_hash="0" * 64,
        num_texts=1,
        key_ids=[],
        threshold=0.01,
    )


def test_an_audits_checks_and_uploads_go_with_it_and_its_log_entry_stays(cast):
    audit = _audit(cast)
    check = Check.objects.create(
        team=cast["acme"], audit=audit, text="an item", key_ids=[], threshold=0.01
    )
    Upload.objects.create(audit=audit, kind=Upload.Kind.TABLE, filename="t.csv", content=b"x")
    log = DetectionLog.objects.create(
        username="alice",
        team=cast["acme"],
        kind="audit",
        audit=audit,
        num_texts=1,
        key_ids=[],
        key_names=[],
    )
    assert list(audit.checks.all()) == [check] and audit.uploads.count() == 1
    assert str(audit) == f"audit {audit.pk} (1 texts, pending)"
    audit.delete()
    assert not Check.objects.filter(id=check.id).exists() and not Upload.objects.exists()
    assert DetectionLog.objects.get(id=log.id).audit_id is None


def test_an_idempotency_key_is_unique_per_team_when_given(cast):
    _audit(cast), _audit(cast)  # no key: as many as submitted
    _audit(cast, key="batch-7")
    with pytest.raises(IntegrityError):
        _audit(cast, key="batch-7")
