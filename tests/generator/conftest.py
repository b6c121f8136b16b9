from __future__ import annotations

import os

import pytest
import torch

torch.set_num_threads(1)  # 2 threads are ~3x slower than 1 on the 2-core machines
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture
def env(monkeypatch):
    """The environment the provenance headers middleware reads: served model, tokenizer
    hash, default key."""
    from generator import provenance_asgi

    monkeypatch.setenv(provenance_asgi.MODEL_ENV, "smollm2-135m")
    monkeypatch.setenv(provenance_asgi.TOKENIZER_ENV, "c0ffee")
    monkeypatch.setenv(provenance_asgi.DEFAULT_KEY_ENV, "team-a")
    provenance_asgi._tokenizer_hash.cache_clear()
    yield
    provenance_asgi._tokenizer_hash.cache_clear()


@pytest.fixture(scope="module")
def signer():
    """An untrusted development certificate for "Acme" and the reply signer over it."""
    from detector.credentials.certificates import development_certificate
    from generator.credentials import ReplyCredentials

    dev = development_certificate("Acme")
    return dev, ReplyCredentials(dev.credential, "Acme")
