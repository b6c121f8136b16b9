"""The answers of the routes that store no check are counted from what they answered: a
stream opened and closed through the API, the public service's refusals by their codes."""

from __future__ import annotations

import time

import pytest

from provenance.metrics import middleware, services
from provenance.public.budgets import BudgetExceeded
from provenance.public.families import VariantLimit
from provenance.public.proof_of_work import ProofOfWorkRequired

pytestmark = pytest.mark.django_db


def _value(metric, **labels) -> float:
    return metric.labels(**labels)._value.get()


def test_a_stream_opened_and_closed_is_counted_once(api_for, alice_key, wm_text):
    alice = api_for("alice")
    opened = _value(services.process_submitted, surface="stream")
    tokens = _value(services.process_tokens, surface="stream")
    created = alice.post("/api/v1/streams", {}, format="json")
    assert created.status_code == 201
    stream_id = created.json()["id"]
    assert _value(services.process_submitted, surface="stream") == opened + 1
    url = f"/api/v1/streams/{stream_id}/append"
    finished = {
        v: _value(services.process_finished, surface="stream", verdict=v) for v in services.VERDICTS
    }
    assert alice.post(url, {"text": wm_text[:200]}, format="json").status_code == 200
    assert finished == {
        v: _value(services.process_finished, surface="stream", verdict=v) for v in services.VERDICTS
    }  # still open: no verdict yet
    body = alice.post(url, {"text": wm_text[200:], "final": True}, format="json").json()
    assert body["closed"] is True
    verdict = body["verdict"]
    assert _value(services.process_finished, surface="stream", verdict=verdict) == (
        finished[verdict] + 1
    )
    assert _value(services.process_tokens, surface="stream") == tokens + body["num_scored_tokens"]
    assert alice.post(url, {"text": "more"}, format="json").status_code == 409  # closed
    assert _value(services.process_finished, surface="stream", verdict=verdict) == (
        finished[verdict] + 1
    )


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (ProofOfWorkRequired, "proof_of_work"),
        (BudgetExceeded, "budget"),
        (VariantLimit, "variant_cap"),
    ],
)
def test_the_public_refusals_are_counted_by_their_real_codes(error, reason):
    before = _value(services.public_refused, reason=reason)
    middleware.count(middleware.PUBLIC_VERIFY, 429, {"code": error.default_code}, 0.0)
    assert _value(services.public_refused, reason=reason) == before + 1


def test_other_errors_and_other_routes_count_nothing():
    snapshot = {
        r: _value(services.public_refused, reason=r) for r in services.REFUSAL_REASONS.values()
    }
    middleware.count(middleware.PUBLIC_VERIFY, 400, {"code": "invalid"}, 0.0)
    middleware.count("api-checks", 429, {"code": "throttled"}, 0.0)
    assert snapshot == {
        r: _value(services.public_refused, reason=r) for r in services.REFUSAL_REASONS.values()
    }


def test_a_public_answer_is_counted_with_its_verdict_tokens_and_time():
    before = _value(services.process_finished, surface="public", verdict="not_watermarked")
    started = time.monotonic() - 0.2
    answer = {"verdict": "not_watermarked", "tokens_scored": 77}
    middleware.count(middleware.PUBLIC_VERIFY, 200, answer, started)
    assert _value(services.process_finished, surface="public", verdict="not_watermarked") == (
        before + 1
    )
