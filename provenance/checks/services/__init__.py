"""Writes for checks and audits, one module per concern:

- ``validation``: what a submitted text or batch must be (refused input stores nothing);
- ``quota``: the daily per-user quota, taken in the transaction that stores the request;
- ``detection_log``: the audit log of every use of the detector;
- ``checks``: a single check's life (create, publish, score, fail) and synchronous /detect;
- ``audits``: a batch's life (submit, publish in chunks, score a chunk, finish);
- ``results``: keys for scoring and storing results once, shared by checks and audits;
- ``sweeper``: publishing again what the broker lost;
- ``retention``: purging texts past their retention period, deleting a check or an audit;
- ``warmup``: tokenizers loaded when a worker starts.

Reads live in ``provenance.checks.selectors``. Services publish tasks by name through
``provenance.checks.queue`` and never import ``provenance.checks.tasks``.
"""

from __future__ import annotations

from provenance.checks.services.audits import (
    audit_enqueue,
    audit_fail,
    audit_refresh,
    audit_score_chunk,
    audit_submit,
)
from provenance.checks.services.checks import check_create, check_enqueue, check_score, detect_now
from provenance.checks.services.detection_log import detection_log_create, text_sha256
from provenance.checks.services.quota import quota_consume
from provenance.checks.services.results import check_fail, results_store
from provenance.checks.services.retention import audit_delete, check_delete, checks_purge
from provenance.checks.services.sweeper import checks_sweep
from provenance.checks.services.validation import archive_texts, document_extract, text_validate
from provenance.checks.services.warmup import tokenizers_warm

__all__ = [
    "archive_texts",
    "document_extract",
    "audit_delete",
    "audit_enqueue",
    "audit_fail",
    "audit_refresh",
    "audit_score_chunk",
    "audit_submit",
    "check_create",
    "check_delete",
    "check_enqueue",
    "check_fail",
    "check_score",
    "checks_purge",
    "checks_sweep",
    "detect_now",
    "detection_log_create",
    "quota_consume",
    "results_store",
    "text_sha256",
    "text_validate",
    "tokenizers_warm",
]
