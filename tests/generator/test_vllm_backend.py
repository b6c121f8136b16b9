"""The vLLM backend's process set-up (generator/vllm_backend.py): the key file reaches the
engine's processes by path, never by value, and the environment a user set is kept. The
engine itself runs in tests/generator/test_vllm_engine.py."""

from __future__ import annotations

import json
import os

from generator.config import KEYS_FILE_ENV
from generator.vllm_backend import PROCESSOR_FQCN, engine_env
from generator.vllm_v1 import DEFAULT_KEY_ENV

NAMES = (KEYS_FILE_ENV, DEFAULT_KEY_ENV, "VLLM_CPU_KVCACHE_SPACE", "VLLM_LOGGING_STREAM")


def test_the_engine_is_pointed_at_the_key_file_by_absolute_path(tmp_path, monkeypatch):
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"team-a": {"key": 0x5EC12E7A11CE0001}}))
    monkeypatch.chdir(tmp_path)
    engine_env("keys.json", "team-a")
    assert os.environ[KEYS_FILE_ENV] == str(keys.resolve())
    assert os.environ[DEFAULT_KEY_ENV] == "team-a"
    assert str(0x5EC12E7A11CE0001) not in "".join(os.environ.values())
    assert os.environ["VLLM_LOGGING_STREAM"] == "ext://sys.stderr"  # stdout carries the JSON
    assert os.environ["VLLM_CPU_KVCACHE_SPACE"] == "1"


def test_what_the_user_set_is_kept_and_no_key_file_sets_none(monkeypatch):
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "4")
    engine_env(None, None)
    assert os.environ["VLLM_CPU_KVCACHE_SPACE"] == "4"
    assert KEYS_FILE_ENV not in os.environ and DEFAULT_KEY_ENV not in os.environ


def test_the_processor_named_to_vllm_is_our_v1_processor():
    import importlib

    module, name = PROCESSOR_FQCN.split(":")
    processor = getattr(importlib.import_module(module), name)
    assert processor.__module__ == "generator.vllm_v1"
