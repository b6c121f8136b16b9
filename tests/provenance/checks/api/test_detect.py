"""POST /detect (provenance.checks.api.detect): vLLM's example fields answered in the request,
human text not flagged, bad text refused."""

from __future__ import annotations

import pytest

from provenance.checks.api.detect import DetectApi
from provenance.checks.models import Check
from tests.provenance.watermark import default_tokens_needed


@pytest.fixture
def alice(api_for):
    return api_for("alice")


def response_detect(client, text):
    return client.post("/detect", {"text": text}, format="json")


def test_detect_answers_the_vllm_example_fields_synchronously(alice, alice_key, wm_text):
    body = response_detect(alice, wm_text).json()
    assert {"score", "p_value", "num_scored_tokens", "is_watermarked"} <= set(body)
    assert set(body) == set(DetectApi.OutputSerializer().fields)  # every documented field
    assert body["is_watermarked"] is True and body["key"] == "acme-main"
    assert body["verdict"] == "watermarked" and "threshold 0.01" in body["verdict_reason"]
    assert body["num_scored_tokens"] > 100 and body["score"] > body["num_scored_tokens"]
    assert Check.objects.count() == 0


def test_detect_does_not_flag_human_text(alice, alice_key, human_text):
    body = response_detect(alice, human_text).json()
    assert body["is_watermarked"] is False and body["p_value"] > 0.01
    # Too few scored tokens to clear a text of unknown kind (the default kind needs 200 for
    # one test at 0.01, more at the global test's share of the localized decision's level)
    needed = default_tokens_needed()
    assert needed > 200
    n = body["gamma"]["num_scored_tokens"]  # the decision's (common pairs left unscored)
    assert 0 < n < needed and body["verdict"] == "inconclusive"
    assert body["verdict_reason"].startswith(f"only {n} tokens could be scored; about {needed} are")


def test_detect_rejects_empty_and_oversized_text(alice, alice_key, settings):
    assert response_detect(alice, "").status_code == 400
    settings.PROVENANCE_MAX_TEXT_BYTES = 10
    assert response_detect(alice, "x" * 11).status_code == 413


def test_detect_gives_upstreams_p_value_under_upstreams_name_and_the_decisions_beside(
    alice, alice_key, human_text, wm_text
):
    """vLLM's example server answers the Gamma p over every de-duplicated token, no span-scan
    factor: so does ``p_value``; the decision's (scan- and family-corrected) is
    ``decision_p_value``, and ``is_watermarked`` is the decision's."""
    import math

    for text in (human_text, wm_text):
        body = response_detect(alice, text).json()
        gamma = body["gamma"]
        assert body["p_value"] == gamma["vllm_p_value"]
        assert body["score"] == gamma["vllm_score"]
        assert body["num_scored_tokens"] == gamma["vllm_num_scored_tokens"]
        if body["decision_p_value"] > 0:  # else below a float's range: log10_p says how far
            assert math.isclose(math.log10(body["decision_p_value"]), body["log10_p"], abs_tol=1e-9)
        assert body["reading"] == "none"
    # one key, a human text: the decision's p is the scan-corrected one, at least the filtered
    # Gamma p over the Gamma test's share of the level, never upstream's number under
    # upstream's name
    from detector.evidence.localize import GAMMA_SHARE

    body = response_detect(alice, human_text).json()
    assert body["decision_p_value"] >= min(1.0, body["gamma"]["p_value"] / GAMMA_SHARE) - 1e-12
