"""What is counted where it happens, for ``/metrics`` (``provenance.metrics.collector``).

- Events of the web processes that store no row (public verification's answers and
  refusals, streams opened and closed): prometheus-client counters. Under gunicorn set
  ``PROMETHEUS_MULTIPROC_DIR`` to an empty directory of the web host (one per host, emptied at
  its start): every worker process writes its counts there and any of them answers the scrape
  with the sum. Each web instance exports its own counts; Prometheus adds instances up.
- Events of the sweeper (another process, often another host): ``Tally`` rows in the database.

Labels are bounded sets named here: never a key, a user, a team or a text.
"""

from __future__ import annotations

from django.db.models import F
from prometheus_client import Counter, Histogram

# Seconds from submission to verdict: a synchronous answer takes milliseconds, a queued audit
# item minutes.
VERDICT_BUCKETS: tuple[float, ...] = (
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    300.0,
    900.0,
    3600.0,
)
# The public service's refusals, by the code its answer carries.
REFUSAL_REASONS: dict[str, str] = {
    "proof_of_work_required": "proof_of_work",
    "throttled": "budget",
    "variant_limit": "variant_cap",
}
SYNC_SURFACES = ("public", "stream")
VERDICTS = ("watermarked", "not_watermarked", "inconclusive")
SWEEPER_REQUEUED = "sweeper_requeued"
SWEEPER_DEAD_WORKERS = "sweeper_dead_workers"
TALLIES = (SWEEPER_REQUEUED, SWEEPER_DEAD_WORKERS)

# Not registered in the default registry: the collector reads them (or, under
# PROMETHEUS_MULTIPROC_DIR, every process's files) and merges them into the exported families.
public_refused = Counter(
    "provenance_public_refused",
    "Public checks refused, by reason",
    ["reason"],
    registry=None,
)
process_submitted = Counter(
    "provenance_process_checks_submitted", "Synchronous checks taken", ["surface"], registry=None
)
process_finished = Counter(
    "provenance_process_checks_finished",
    "Synchronous checks answered, by verdict",
    ["surface", "verdict"],
    registry=None,
)
process_tokens = Counter(
    "provenance_process_tokens_scored", "Tokens scored synchronously", ["surface"], registry=None
)
process_seconds = Histogram(
    "provenance_process_verdict_seconds",
    "Seconds from a synchronous check's request to its verdict",
    ["surface"],
    buckets=VERDICT_BUCKETS,
    registry=None,
)
PROCESS_METRICS = (public_refused, process_submitted, process_finished, process_tokens)
PROCESS_HISTOGRAMS = (process_seconds,)


def public_refusal_count(code: str) -> None:
    """A public check refused with ``code`` (a code outside ``REFUSAL_REASONS`` is not a
    refusal of the service's guards: not counted)."""
    reason = REFUSAL_REASONS.get(code)
    if reason is not None:
        public_refused.labels(reason=reason).inc()


def sync_submitted_count(surface: str) -> None:
    if surface in SYNC_SURFACES:
        process_submitted.labels(surface=surface).inc()


def sync_finished_count(surface: str, verdict: str, tokens: int, seconds: float | None) -> None:
    """A synchronous check answered: its verdict, the tokens it scored and, when the request
    that took it is the one that answered it, the seconds in between."""
    if surface not in SYNC_SURFACES:
        return
    process_finished.labels(surface=surface, verdict=_verdict(verdict)).inc()
    if tokens > 0:
        process_tokens.labels(surface=surface).inc(tokens)
    if seconds is not None:
        process_seconds.labels(surface=surface).observe(max(0.0, seconds))


def _verdict(verdict: str) -> str:
    return verdict if verdict in VERDICTS else "unknown"


def tally_add(name: str, amount: int) -> None:
    """Add ``amount`` to the database counter ``name`` (one of ``TALLIES``): one UPDATE, the
    row created on first use. Called once per sweeper pass that found something."""
    if name not in TALLIES:
        raise ValueError(f"unknown tally {name!r}")
    if amount <= 0:
        return
    from provenance.metrics.models import Tally

    if not Tally.objects.filter(name=name).update(value=F("value") + amount):
        tally, created = Tally.objects.get_or_create(name=name, defaults={"value": amount})
        if not created:  # created meanwhile by another process
            Tally.objects.filter(pk=tally.pk).update(value=F("value") + amount)
