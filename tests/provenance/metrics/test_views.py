"""``GET /metrics`` for real: a check posted to the API and scored by a Celery worker process
is counted on the next scrape; the endpoint is off without its token and hides itself from a
wrong one."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from provenance.checks.models import Check
from provenance.metrics.collector import reset_cache
from provenance.metrics.views import authorized, metrics_view
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
TOKEN = "scrape-token-0123456789abcdef"


@pytest.fixture
def metrics_on(settings):
    settings.PROVENANCE_METRICS_TOKEN = TOKEN
    settings.PROVENANCE_METRICS_MAX_AGE = 0
    reset_cache()
    yield
    reset_cache()


def scrape(client: Client | None = None) -> str:
    response = (client or Client()).get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200, response.status_code
    assert response["Content-Type"].startswith("text/plain; version=")
    assert "no-cache" in response["Cache-Control"] or "no-store" in response["Cache-Control"]
    return response.content.decode()


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(text: str, name: str, **labels: str) -> float:
    return samples(text).get((name, tuple(sorted(labels.items()))), 0.0)


def test_a_check_made_through_the_api_and_the_worker_is_counted(
    metrics_on, celery_worker, api_for, alice_key, wm_text
):
    before = scrape()
    alice = api_for("alice")
    check_id = alice.post("/api/v1/checks", {"text": wm_text}, format="json").json()["id"]
    wait_until(lambda: Check.objects.get(id=check_id).status == "done", 60)
    assert Check.objects.get(id=check_id).surface == "api"
    after = scrape()

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("provenance_checks_submitted_total", surface="api") == 1
    assert grew("provenance_checks_finished_total", surface="api", verdict="watermarked") == 1
    assert grew("provenance_check_verdict_seconds_count", surface="api") == 1
    assert grew("provenance_check_verdict_seconds_bucket", surface="api", le="+Inf") == 1
    scored = Check.objects.get(id=check_id).num_scored_tokens
    assert scored and grew("provenance_detection_tokens_scored_total", surface="api") == scored
    # The solo worker beats: it is live (its row, emptied with the tables between tests,
    # is written again by its next beat); nothing waits once the check is done.
    wait_until(lambda: value(scrape(), "provenance_workers_live") >= 1, 30)
    assert value(after, "provenance_queue_depth") == 0
    # Nothing of who asked or with which key: no key name, user or team name, no text.
    for secret in ("acme-main", "alice", "acme", wm_text[:40]):
        assert secret not in after
    labels = {k for (_, pairs) in samples(after) for k, _ in pairs}
    assert labels <= {"surface", "verdict", "reason", "le"}


def test_it_answers_404_while_no_token_is_set(settings, cast):
    settings.PROVENANCE_METRICS_TOKEN = ""
    for header in (
        {},
        {"HTTP_AUTHORIZATION": "Bearer "},
        {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"},
    ):
        assert Client().get("/metrics", **header).status_code == 404


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        f"Token {TOKEN}",
        f"Basic {TOKEN}",
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN[:-1]}",
        "Bearer",
        f"Bearer{TOKEN}",
    ],
)
def test_a_missing_or_wrong_token_gets_the_same_404(metrics_on, header):
    extra = {} if header is None else {"HTTP_AUTHORIZATION": header}
    response = Client().get("/metrics", **extra)
    assert response.status_code == 404
    assert b"provenance_" not in response.content


def test_only_get_is_answered(metrics_on):
    response = Client().post("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 405


def test_the_token_is_compared_whole(metrics_on, rf):
    request = rf.get("/metrics", HTTP_AUTHORIZATION=f"bearer {TOKEN}")
    assert authorized(request)  # the scheme is case-insensitive, the token is not
    assert not authorized(rf.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN.upper()}"))
    body = metrics_view(request).content.decode()
    assert re.search(r"^# TYPE provenance_checks_submitted_total counter$", body, re.M)
