"""The playground's embedded generator as the runner picks it: the backend the operator
names, else vLLM when installed; none started when the operator runs their own. (The process
itself is exercised by tests/provenance/playground/test_embedded.py.)"""

from __future__ import annotations

import importlib.util

import pytest

from provenance.runner.generator import BACKEND_ENV, embedded_backend, external_url


@pytest.mark.parametrize("named", ["vllm", "transformers"])
def test_the_backend_the_operator_names_is_used(monkeypatch, named):
    monkeypatch.setenv(BACKEND_ENV, named)
    assert embedded_backend() == named


def test_without_a_name_vllm_is_used_when_installed(monkeypatch):
    monkeypatch.delenv(BACKEND_ENV, raising=False)
    installed = importlib.util.find_spec("vllm") is not None
    assert embedded_backend() == ("vllm" if installed else "transformers")


def test_an_operators_generator_replaces_the_embedded_one(monkeypatch):
    monkeypatch.delenv("PROVENANCE_GENERATOR_URL", raising=False)
    assert external_url() is None
    monkeypatch.setenv("PROVENANCE_GENERATOR_URL", "http://10.0.0.7:8001")
    assert external_url() == "http://10.0.0.7:8001"
