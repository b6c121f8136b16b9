"""The figures ``/metrics`` exports, in Prometheus' text format (prometheus-client).

Most are read from the database at scrape time, so a worker or a web instance on any host
counts alike and a restart loses nothing: checks submitted and finished (the checks table,
grouped by surface, status and verdict), the time from submission to verdict (bucket counts
of one aggregate query), the queue (pending checks and the oldest one's age, on the
``(status, created_at)`` index), live workers (heartbeats) and the sweeper's tallies. The
web processes' own events (public verification, streams) come from prometheus-client
counters (``provenance.metrics.services``) and are merged into the same families. The
database part is computed at most once every PROVENANCE_METRICS_MAX_AGE seconds per process,
whatever the number of scrapers: a handful of aggregate queries whose rows are bounded by the
label sets, never by the table.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import (
    Case,
    CharField,
    Count,
    F,
    FloatField,
    Func,
    Min,
    Q,
    QuerySet,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Coalesce, Least
from django.utils import timezone
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from provenance import env as environment
from provenance.checks.models import Check, Status
from provenance.heartbeats.models import Worker
from provenance.metrics import services
from provenance.metrics.models import Snapshot, Tally

SURFACES = ("page", "api", "audit", "public", "stream")

_lock = threading.Lock()
_cached: tuple[float, dict[str, Any]] | None = None


def _surface() -> Case:
    """A check's surface: an audit's item, else what its row says (``unknown``: a check
    stored before the surface was recorded)."""
    return Case(
        When(audit__isnull=False, then=Value("audit")),
        When(surface="", then=Value("unknown")),
        default=F("surface"),
        output_field=CharField(),
    )


class EpochSeconds(Func):
    """A timestamp as seconds (a float), computed by the database itself: Django's own
    duration arithmetic runs a Python function per row on SQLite."""

    output_field = FloatField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, template="(julianday(%(expressions)s) * 86400.0)")

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, template="EXTRACT(EPOCH FROM %(expressions)s)")


@dataclass
class Totals:
    """The checks' figures: by ``created_at`` (submitted) and by ``finished_at`` (finished,
    tokens, verdict time), up to the two watermarks. Those columns never change once
    written, so each scrape reads only the rows written since the shared ``Snapshot`` was
    last advanced, plus the last ``SETTLE`` seconds, which it does not keep (a transaction
    that wrote an earlier timestamp may commit that late)."""

    created_until: datetime | None = None
    finished_until: datetime | None = None
    submitted: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    finished: dict[tuple[str, str], float] = field(default_factory=lambda: defaultdict(float))
    tokens: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    histogram: dict[str, list[float]] = field(default_factory=dict)

    @classmethod
    def load(cls, snapshot: Snapshot) -> Totals:
        data = snapshot.totals or {}
        return cls(
            snapshot.created_until,
            snapshot.finished_until,
            defaultdict(float, data.get("submitted", {})),
            defaultdict(
                float,
                {tuple(k.split("|", 1)): v for k, v in data.get("finished", {}).items()},
            ),
            defaultdict(float, data.get("tokens", {})),
            {s: list(v) for s, v in data.get("histogram", {}).items()},
        )

    def dump(self) -> dict[str, Any]:
        return {
            "submitted": dict(self.submitted),
            "finished": {f"{s}|{v}": n for (s, v), n in self.finished.items()},
            "tokens": dict(self.tokens),
            "histogram": self.histogram,
        }


SETTLE = timedelta(seconds=120)


def _add_submitted(totals: Totals, checks: QuerySet[Check]) -> None:
    rows = checks.annotate(s=_surface()).values("s").annotate(n=Count("id")).order_by()
    for row in rows:
        totals.submitted[row["s"]] += float(row["n"])


def _add_finished(totals: Totals, checks: QuerySet[Check]) -> None:
    """Finished checks by surface and verdict, their tokens, and the verdict-time
    histogram's cumulative bucket counts, count and sum (one aggregate query)."""
    submitted_at = Least("created_at", Coalesce("started_at", "created_at"))
    took = EpochSeconds("finished_at") - EpochSeconds(submitted_at)
    bounds = services.VERDICT_BUCKETS
    buckets = {f"le{i}": Count("id", filter=Q(took__lte=bound)) for i, bound in enumerate(bounds)}
    # The range of finished_at selects the rows (its index); the status is grouped on, not
    # filtered on, so that the planner does not prefer the (status, created_at) index.
    rows = (
        checks.annotate(s=_surface(), took=took)
        .values("s", "status", "verdict")
        .annotate(n=Count("id"), tokens=Sum("num_scored_tokens"), seconds=Sum("took"), **buckets)
        .order_by()
    )
    for row in rows:
        surface, n = row["s"], float(row["n"])
        if row["status"] == Status.DONE:
            totals.finished[(surface, row["verdict"] or "unknown")] += n
            totals.tokens[surface] += float(row["tokens"] or 0)
        elif row["status"] == Status.FAILED:
            totals.finished[(surface, "failed")] += n
        else:  # finished, then queued again: counted when it finishes anew
            continue
        values = totals.histogram.setdefault(surface, [0.0] * (len(bounds) + 2))
        for i in range(len(bounds)):
            values[i] += float(row[f"le{i}"])
        values[-2] += n
        values[-1] += max(0.0, float(row["seconds"] or 0.0))


def _advance(cut: datetime) -> Totals:
    """The shared snapshot, advanced to ``cut`` (the rows written since its watermarks
    added), under its row lock: two scrapes never add the same rows."""
    with transaction.atomic():
        snapshot = Snapshot.objects.select_for_update().filter(pk=1).first()
        if snapshot is None:
            try:
                with transaction.atomic():
                    snapshot = Snapshot.objects.create(pk=1)
            except IntegrityError:  # created meanwhile by another process
                snapshot = Snapshot.objects.select_for_update().get(pk=1)
        totals = Totals.load(snapshot)
        if totals.created_until is None or cut > totals.created_until:
            new = Check.objects.filter(created_at__lt=cut)
            if totals.created_until is not None:
                new = new.filter(created_at__gte=totals.created_until)
            _add_submitted(totals, new)
            totals.created_until = cut
        if totals.finished_until is None or cut > totals.finished_until:
            new = Check.objects.filter(finished_at__lt=cut)
            if totals.finished_until is not None:
                new = new.filter(finished_at__gte=totals.finished_until)
            _add_finished(totals, new)
            totals.finished_until = cut
        snapshot.created_until = totals.created_until
        snapshot.finished_until = totals.finished_until
        snapshot.totals = totals.dump()
        snapshot.save()
    return totals


def database_figures() -> dict[str, Any]:
    """The database's figures (plain numbers): the shared snapshot advanced over the checks
    written since, the last SETTLE seconds added to a copy, the queue, live workers and
    tallies read whole; a handful of aggregate queries on indexed ranges."""
    now = timezone.now()
    figures = _advance(now - SETTLE)
    _add_submitted(figures, Check.objects.filter(created_at__gte=figures.created_until))
    _add_finished(figures, Check.objects.filter(finished_at__gte=figures.finished_until))

    open_checks = {
        row["status"]: (row["n"], row["oldest"])
        for row in Check.objects.filter(status__in=[Status.PENDING, Status.RUNNING])
        .values("status")
        .annotate(n=Count("id"), oldest=Min("created_at"))
        .order_by()
    }
    pending, oldest = open_checks.get(Status.PENDING, (0, None))
    alive_since = now - timedelta(seconds=settings.PROVENANCE_WORKER_DEAD_AFTER)
    live = Worker.objects.filter(dead_at__isnull=True, beat_at__gte=alive_since).count()
    tallies = dict(Tally.objects.filter(name__in=services.TALLIES).values_list("name", "value"))
    bounds = len(services.VERDICT_BUCKETS)
    return {
        "submitted": dict(figures.submitted),
        "finished": dict(figures.finished),
        "tokens": dict(figures.tokens),
        "histogram": {s: (v[:bounds], v[-2], v[-1]) for s, v in figures.histogram.items()},
        "pending": float(pending),
        "running": float(open_checks.get(Status.RUNNING, (0, None))[0]),
        "oldest_age": max(0.0, (now - oldest).total_seconds()) if oldest else 0.0,
        "workers": float(live),
        "tallies": {name: float(tallies.get(name, 0)) for name in services.TALLIES},
    }


def _cached_database_figures() -> dict[str, Any]:
    global _cached
    max_age = settings.PROVENANCE_METRICS_MAX_AGE
    with _lock:
        if _cached is not None and time.monotonic() - _cached[0] < max_age:
            return _cached[1]
    figures = database_figures()
    with _lock:
        _cached = (time.monotonic(), figures)
    return figures


def process_families() -> Iterable[Metric]:
    """The web processes' own counters: every process's (PROMETHEUS_MULTIPROC_DIR), else
    this process's."""
    if environment.metrics_multiprocess_dir():
        from prometheus_client import multiprocess

        return list(multiprocess.MultiProcessCollector(None).collect())
    families: list[Metric] = []
    for metric in (*services.PROCESS_METRICS, *services.PROCESS_HISTOGRAMS):
        families.extend(metric.collect())
    return families


def _process_samples() -> dict[str, list[tuple[dict[str, str], float]]]:
    samples: dict[str, list[tuple[dict[str, str], float]]] = defaultdict(list)
    for family in process_families():
        for sample in family.samples:
            samples[sample.name].append((dict(sample.labels), float(sample.value)))
    return samples


def _summed(
    samples: list[tuple[dict[str, str], float]], *names: str
) -> dict[tuple[str, ...], float]:
    """Sample values added up by the values of ``names`` (processes' samples merge)."""
    out: dict[tuple[str, ...], float] = defaultdict(float)
    for labels, value in samples:
        out[tuple(labels.get(name, "") for name in names)] += value
    return out


def _with_processes(
    counts: dict[Any, float], samples: list[tuple[dict[str, str], float]], *names: str
) -> dict[tuple[str, ...], float]:
    """A database figure (keyed by one label's value or by a tuple of them) plus the
    processes' samples of the same family, keyed by the tuple of ``names``' values."""
    out = {(key if isinstance(key, tuple) else (key,)): value for key, value in counts.items()}
    for key, value in _summed(samples, *names).items():
        out[key] = out.get(key, 0.0) + value
    return out


class ProvenanceCollector:
    """Every exported family, database and processes merged."""

    def collect(self) -> Iterator[Metric]:
        db = _cached_database_figures()
        proc = _process_samples()

        submitted = CounterMetricFamily(
            "provenance_checks_submitted",
            "Checks submitted, by surface (page, api, audit, public, stream)",
            labels=["surface"],
        )
        counts = _with_processes(
            db["submitted"], proc["provenance_process_checks_submitted_total"], "surface"
        )
        for surface in sorted({key[0] for key in counts} | set(SURFACES)):
            submitted.add_metric([surface], counts.get((surface,), 0.0))
        yield submitted

        finished = CounterMetricFamily(
            "provenance_checks_finished",
            "Checks finished, by surface and verdict (failed: no verdict)",
            labels=["surface", "verdict"],
        )
        done = _with_processes(
            db["finished"], proc["provenance_process_checks_finished_total"], "surface", "verdict"
        )
        for key, value in sorted(done.items()):
            finished.add_metric(list(key), value)
        yield finished

        tokens = CounterMetricFamily(
            "provenance_detection_tokens_scored",
            "Tokens scored by the detector, by surface",
            labels=["surface"],
        )
        scored = _with_processes(
            db["tokens"], proc["provenance_process_tokens_scored_total"], "surface"
        )
        for key, value in sorted(scored.items()):
            tokens.add_metric(list(key), value)
        yield tokens

        yield self._histogram(db["histogram"], proc)

        refused = CounterMetricFamily(
            "provenance_public_refused",
            "Public checks refused, by reason (proof_of_work, budget, variant_cap)",
            labels=["reason"],
        )
        reasons = _summed(proc["provenance_public_refused_total"], "reason")
        for reason in sorted(set(services.REFUSAL_REASONS.values())):
            refused.add_metric([reason], reasons.get((reason,), 0.0))
        yield refused

        yield GaugeMetricFamily(
            "provenance_queue_depth", "Checks waiting for a worker (pending)", value=db["pending"]
        )
        yield GaugeMetricFamily(
            "provenance_queue_oldest_age_seconds",
            "Age of the oldest waiting check (0: none waits)",
            value=db["oldest_age"],
        )
        yield GaugeMetricFamily(
            "provenance_checks_running", "Checks a worker holds", value=db["running"]
        )
        yield GaugeMetricFamily(
            "provenance_workers_live",
            "Workers whose heartbeat is recent (PROVENANCE_WORKER_DEAD_AFTER)",
            value=db["workers"],
        )
        yield CounterMetricFamily(
            "provenance_sweeper_requeued",
            "Checks and uploads the sweeper published again",
            value=db["tallies"][services.SWEEPER_REQUEUED],
        )
        yield CounterMetricFamily(
            "provenance_sweeper_dead_workers",
            "Workers the sweeper found dead",
            value=db["tallies"][services.SWEEPER_DEAD_WORKERS],
        )

    @staticmethod
    def _histogram(
        db: dict[str, tuple[list[float], float, float]],
        proc: dict[str, list[tuple[dict[str, str], float]]],
    ) -> HistogramMetricFamily:
        family = HistogramMetricFamily(
            "provenance_check_verdict_seconds",
            "Seconds from a check's submission to its verdict, by surface",
            labels=["surface"],
        )
        bounds = services.VERDICT_BUCKETS
        merged: dict[str, tuple[list[float], float, float]] = {
            s: (list(c), n, t) for s, (c, n, t) in db.items()
        }
        buckets = proc["provenance_process_verdict_seconds_bucket"]
        counts = _summed(proc["provenance_process_verdict_seconds_count"], "surface")
        sums = _summed(proc["provenance_process_verdict_seconds_sum"], "surface")
        for (surface,), n in counts.items():
            per_bound = _summed([(lab, v) for lab, v in buckets if lab["surface"] == surface], "le")
            c, total, seconds = merged.get(surface, ([0.0] * len(bounds), 0.0, 0.0))
            for i, bound in enumerate(bounds):
                c[i] += sum(v for (le,), v in per_bound.items() if float(le) == bound)
            merged[surface] = (c, total + n, seconds + sums.get((surface,), 0.0))
        for surface, (c, total, seconds) in sorted(merged.items()):
            pairs = [(_bound(b), v) for b, v in zip(bounds, c, strict=True)]
            family.add_metric([surface], [*pairs, ("+Inf", total)], seconds)
        return family


def _bound(value: float) -> str:
    return repr(float(value))


REGISTRY = CollectorRegistry(auto_describe=False)
REGISTRY.register(ProvenanceCollector())  # type: ignore[arg-type]


def exposition() -> bytes:
    """The whole exposition, in Prometheus' text format."""
    return generate_latest(REGISTRY)


def reset_cache() -> None:
    """Forget this process's cached figures (the next scrape reads the database)."""
    global _cached
    with _lock:
        _cached = None
