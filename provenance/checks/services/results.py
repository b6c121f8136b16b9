"""Loading what scoring needs and storing what it produced, shared by checks and audits.

A scoring task may be delivered twice (late acks, the sweeper) and both deliveries may run
at once: each claims its checks first (``provenance.checks.services.claims.checks_claim``), and
results are stored in one transaction with status "done" only for the checks the task still
holds, so the loser of such a race stores nothing.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from provenance.checks import bulk
from provenance.checks.fields import HYPOTHESIS_COLUMNS
from provenance.checks.models import Check, Hypothesis, Status, Upload
from provenance.checks.services.claims import held, held_params
from provenance.checks.services.deletion import purged_cleanup
from provenance.keys.models import WatermarkKey
from provenance.keys.selectors import LATEST_DONE_CALIBRATION
from provenance.lib import heatmap, precompiled, rowcache
from provenance.scoring.service import HypothesisResult, ScoringError, TextResult

logger = logging.getLogger(__name__)


def keys_for_scoring(key_ids: list[str]) -> list[WatermarkKey]:
    """The keys a check was submitted against, in its order; deleted keys fail the check."""
    wanted = [uuid.UUID(str(key_id)) for key_id in key_ids]

    def rows() -> Any:
        return (
            WatermarkKey.objects.filter(id__in=wanted)
            .select_related("tokenizer")
            .order_by("id")
            .annotate(latest_calibration_id=LATEST_DONE_CALIBRATION)
        )

    # Read as the database has it now, without the ORM's cost on every task
    # (provenance.lib.rowcache); the annotation lets scoring reuse its calibration facts.
    found = {key.id: key for key in rowcache.validated(("keys_for_scoring", *wanted), rows)}
    missing = [str(key_id) for key_id in wanted if key_id not in found]
    if missing:
        raise ScoringError(f"{len(missing)} key(s) were deleted before scoring")
    return [found[key_id] for key_id in wanted]


def results_store(pairs: list[tuple[Check, TextResult]], claim: str) -> int:
    """Store results and status "done" for the checks still held under ``claim`` (the task
    that scored them); returns how many. A check whose claim was taken over (its worker was
    taken for dead, the sweeper released it, another task claimed it) is left to its new
    holder, and a done check is never held.

    The held checks are locked first (PostgreSQL: a racing claimer or the sweeper waits,
    then finds them done; SQLite: IMMEDIATE transactions serialise the two already)."""
    with transaction.atomic():
        ids = [check.id for check, _ in pairs]
        # Each held check's purge time, read under the lock: only one purged meanwhile needs
        # its per-token data removed again after the write (one UPDATE less per task). The
        # statement is compiled once per thread and shape (every task runs it).
        rows = precompiled.objects(
            ("results_store_lock", len(ids)),
            lambda: held(ids, claim).select_for_update().only("id", "purged_at"),
            held_params(ids, claim),
        )
        purged_at = {row.id: row.purged_at for row in rows}
        fresh = [(check, result) for check, result in pairs if check.id in purged_at]
        results_write(fresh)
        purged = [check_id for check_id, when in purged_at.items() if when is not None]
        if purged:
            purged_cleanup(purged)
    if len(fresh) < len(pairs):
        logger.info("%d check(s) were taken over by another task", len(pairs) - len(fresh))
    return len(fresh)


def reading_store(check: Check, result: TextResult) -> bool:
    """Store a check's final decision after its reading (``result``: the worker's decision,
    reading "done" or "skipped") in place of the model-free stage's, if the check still waits
    for it (reading "pending"): one transaction, the row locked, its hypotheses replaced.
    Returns whether it was stored (a second delivery of the same reading stores nothing)."""
    with transaction.atomic():
        waiting = (
            Check.objects.select_for_update()
            .filter(id=check.id, status=Status.DONE, reading="pending")
            .values_list("purged_at", flat=True)
        )
        found = list(waiting)
        if not found:
            return False
        Hypothesis.objects.filter(check_run_id=check.id).delete()
        results_write([(check, result)])
        if found[0] is not None:
            purged_cleanup([check.id])
    return True


def check_fail(check_id: Any, reason: str) -> None:
    """Fail a check that is not done; a document it was staged with goes too (a task that
    failed or ran out of time while reading it)."""
    with transaction.atomic():
        Check.objects.filter(id=check_id).exclude(status=Status.DONE).update(
            status=Status.FAILED, failure_reason=reason, finished_at=timezone.now()
        )
        Upload.objects.filter(check_run_id=check_id).delete()


def results_write(pairs: list[tuple[Check, TextResult]]) -> None:
    """Write results and status "done"; the caller holds the checks (``results_store``)."""
    now = timezone.now()
    hypotheses_insert(pairs)
    bulk.update_rows(
        Check, RESULT_FIELDS, (_result_row(check, result, now) for check, result in pairs)
    )


def hypotheses_insert(pairs: list[tuple[Check, TextResult]]) -> list[Hypothesis]:
    """INSERT each check's hypothesis rows; returns them as (unsaved-id) objects, in order."""
    inserts = bulk.Inserts()
    hypotheses = hypotheses_prepare(pairs, inserts)
    inserts.run()
    return hypotheses


def hypotheses_prepare(
    pairs: list[tuple[Check, TextResult]], inserts: bulk.Inserts
) -> list[Hypothesis]:
    """Add each check's hypothesis rows to ``inserts``; returns them as (unsaved-id)
    objects, in order."""
    rows = [_hypothesis_row(check, h) for check, result in pairs for h in result.hypotheses]
    inserts.rows(Hypothesis, HYPOTHESIS_COLUMNS, rows)
    names = bulk.attnames(Hypothesis, HYPOTHESIS_COLUMNS)
    return [Hypothesis(**dict(zip(names, row, strict=True))) for row in rows]


def result_values(result: TextResult, now: datetime) -> dict[str, Any]:
    """The columns (``RESULT_FIELDS``) of a check scored with ``result``, done at ``now``."""
    best = result.hypotheses[result.best] if result.best is not None else None
    return {
        "status": Status.DONE,
        "failure_reason": "",
        "num_hypotheses": len(result.hypotheses),
        "is_watermarked": result.is_watermarked,
        "verdict": result.verdict,
        "verdict_reason": result.verdict_reason,
        "verdict_tokens_needed": result.tokens_needed,
        "p_value": result.p_value,
        "log10_p": result.log10_p,
        "num_tokens": best.detection.num_tokens if best else 0,
        "num_scored_tokens": best.detection.num_scored_tokens if best else 0,
        "best_key": best.key if best else None,
        "best_index": result.best,
        "correction": result.family.correction,
        "decided_by": result.decided_by,
        "reading": result.reading,
        "reading_ms": result.read_seconds * 1000.0 if result.reading == "done" else None,
        "content_credentials": result.content_credentials,
        "key_measured_fpr": result.key_measured_fpr,
        "token_data": result.token_data,
        "heatmap_compact": heatmap.compact(result.token_data),
        "spans": list(result.spans),
        "finished_at": now,
        "scoring_ms": result.elapsed_ms,
    }


# started_at is not among them: the update that marks a check running sets it.
RESULT_FIELDS = [
    "status",
    "content_credentials",
    "failure_reason",
    "num_hypotheses",
    "is_watermarked",
    "verdict",
    "verdict_reason",
    "verdict_tokens_needed",
    "p_value",
    "log10_p",
    "num_tokens",
    "num_scored_tokens",
    "best_key",
    "best_index",
    "correction",
    "decided_by",
    "reading",
    "reading_ms",
    "key_measured_fpr",
    "token_data",
    "heatmap_compact",
    "spans",
    "finished_at",
    "scoring_ms",
]


def _result_row(check: Check, result: TextResult, now: datetime) -> tuple[Any, ...]:
    values = result_values(result, now)
    return (check.id, *(values[name] for name in RESULT_FIELDS))


def _hypothesis_row(check: Check, h: HypothesisResult) -> tuple[Any, ...]:
    values = hypothesis_values(check, h)
    return tuple(values[name] for name in HYPOTHESIS_COLUMNS)


def hypothesis_values(check: Check, h: HypothesisResult) -> dict[str, Any]:
    """The columns (``HYPOTHESIS_COLUMNS``) of one hypothesis of ``check``."""
    d = h.detection
    return {
        "check_run": check.id,
        "index": h.index,
        "key": h.key.id,
        "key_name": h.key.name,
        "tokenizer": h.tokenizer.id,
        "tokenizer_name": h.tokenizer.name,
        "algorithm": h.key.algorithm,
        "score": d.score,
        "num_tokens": d.num_tokens,
        "num_scored_tokens": d.num_scored_tokens,
        "p_value": d.p_value,
        "log10_p": d.log10_p,
        "adjusted_log10_p": h.adjusted_log10_p,
        "decision_log10_p": h.hypothesis.decision_log10_p,
        "weighted_log10_p": None if d.weighted is None else d.weighted.log10_p,
        "weighted_suspected": None if d.weighted is None else d.weighted.num_suspected,
        "decided_by": h.decided_by,
        "ngram_table": h.ngram_table,
        "reading_reserved": h.reading_reserved,
    }
