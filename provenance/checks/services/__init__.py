"""Writes for checks, one module per concern:

- ``validation``: what a submitted text must be (refused input stores nothing);
- ``checks``: a single check's life (create, publish, score, fail) and synchronous /detect;
- ``extraction``: a check of an uploaded document, staged by the request, read by the worker;
- ``claims``: which worker holds which check (a task claims its checks first);
- ``results``: keys for scoring and storing results once, shared by checks and audits;
- ``deletion``: a check's text purged (by retention, or deleted at once), the verdict kept;
- ``warmup``: tokenizers loaded when a worker starts.

Scoring is a service of its own (``provenance.scoring``). Audits, detector use (log and
quota), workers, retention and the sweeper are apps of their own (``provenance.audits``,
``provenance.usage``, ``provenance.heartbeats``, ``provenance.retention``,
``provenance.sweeper``).
Reads live in ``provenance.checks.selectors``. Services publish tasks by name through
``provenance.checks.queue`` and never import ``provenance.checks.tasks``.
"""

from __future__ import annotations

from provenance.checks.services.checks import (
    check_create,
    check_enqueue,
    check_read,
    check_score,
    detect_now,
    reading_skip,
)
from provenance.checks.services.extraction import check_document_create
from provenance.checks.services.results import check_fail, results_store
from provenance.checks.services.validation import (
    archive_texts,
    document_extract,
    refusal_problem,
    text_validate,
)
from provenance.checks.services.warmup import tokenizers_warm

__all__ = [
    "archive_texts",
    "check_create",
    "check_document_create",
    "check_enqueue",
    "check_fail",
    "check_read",
    "check_score",
    "detect_now",
    "document_extract",
    "reading_skip",
    "refusal_problem",
    "results_store",
    "text_validate",
    "tokenizers_warm",
]
