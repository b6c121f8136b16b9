"""The manifest's names and values."""

from __future__ import annotations

import base64

from detector.credentials.manifest import (
    SOFT_BINDING_ALG,
    TRAINED_ALGORITHMIC_MEDIA,
    Generation,
    c2pa_soft_binding_value,
    key_id_of_soft_binding_value,
)


def test_soft_binding_values_round_trip_and_refuse_garbage():
    assert key_id_of_soft_binding_value(c2pa_soft_binding_value("k1-x")) == "k1-x"
    assert key_id_of_soft_binding_value("***") is None
    assert key_id_of_soft_binding_value(base64.b64encode(b"\x00\x01").decode()) is None


def test_the_definition_says_created_by_a_trained_model_with_our_soft_binding():
    definition = Generation("m", "Org", "k1").definition("t.txt", "text/plain")
    labels = [assertion["label"] for assertion in definition["assertions"]]
    assert labels == ["c2pa.actions.v2", "c2pa.soft-binding", "io.github.provenance.generation"]
    action = definition["assertions"][0]["data"]["actions"][0]
    assert action["action"] == "c2pa.created"
    assert action["digitalSourceType"] == TRAINED_ALGORITHMIC_MEDIA
    binding = definition["assertions"][1]["data"]
    assert binding["alg"] == SOFT_BINDING_ALG
    assert binding["blocks"][0]["value"] == c2pa_soft_binding_value("k1")
