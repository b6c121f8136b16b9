"""The Grafana dashboard (deploy/grafana/provenance.json) draws what ``/metrics`` exports:
every query parses as PromQL, and every metric it names is one the endpoint answered with
after a check was made through the API and scored by a worker process."""

from __future__ import annotations

import json
from pathlib import Path

import promql_parser
import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from provenance.checks.models import Check
from provenance.metrics.collector import reset_cache
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
DASHBOARD = Path(__file__).resolve().parents[3] / "deploy" / "grafana" / "provenance.json"
TOKEN = "dashboard-scrape-token-0123456789"


def _expressions() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]
    assert len(exprs) >= 10
    return exprs


def _names(expr: str) -> set[str]:
    found: set[str] = set()

    def visit(node: object) -> None:
        if isinstance(node, promql_parser.VectorSelector) and node.name:
            found.add(node.name)

    promql_parser.walk(promql_parser.parse(expr), visit)
    assert found, f"no metric in {expr!r}"
    return found


def test_every_query_parses_and_a_broken_one_would_not():
    for expr in _expressions():
        _names(expr)
    with pytest.raises(ValueError):
        promql_parser.parse("sum(rate(provenance_queue_depth[5m])")


def test_the_dashboard_names_only_exported_metrics(
    settings, celery_worker, api_for, alice_key, wm_text
):
    settings.PROVENANCE_METRICS_TOKEN = TOKEN
    settings.PROVENANCE_METRICS_MAX_AGE = 0
    reset_cache()
    alice = api_for("alice")
    check_id = alice.post("/api/v1/checks", {"text": wm_text}, format="json").json()["id"]
    wait_until(lambda: Check.objects.get(id=check_id).status == "done", 60)
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    # The names a query may use: each sample's own (counters' _total, histograms' _bucket,
    # _sum and _count included), as Prometheus stores them.
    exported = {
        sample.name
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }
    used = set().union(*(_names(expr) for expr in _expressions()))
    assert used <= exported, f"not exported: {sorted(used - exported)}"
    # Every family the endpoint exports is drawn somewhere.
    families = {
        name.removesuffix("_bucket").removesuffix("_sum").removesuffix("_count") for name in used
    }
    assert {
        "provenance_checks_submitted_total",
        "provenance_check_verdict_seconds",
        "provenance_public_refused_total",
        "provenance_workers_live",
        "provenance_queue_oldest_age_seconds",
        "provenance_sweeper_requeued_total",
        "provenance_detection_tokens_scored_total",
    } <= families
