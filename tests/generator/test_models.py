"""The embedded model's conversion writes its directory with the process umask's modes:
private from the start under ``make run`` (umask 0077), readable by others under 0022."""

from __future__ import annotations

import importlib
import os
import stat
from pathlib import Path

import pytest

from generator import models


class _Saved:
    """Stands in for transformers' GGUF loaders (dequantizing the real model takes ~30 s):
    save_pretrained writes files the way transformers does, with plain open()."""

    config = object()
    hf_quantizer = None

    @classmethod
    def from_pretrained(cls, *args: object, **kwargs: object) -> _Saved:
        return cls()

    def save_pretrained(self, directory: Path) -> None:
        for name in ("config.json", "model.safetensors", "tokenizer.json"):
            (Path(directory) / name).write_text("{}")


@pytest.fixture
def umask():
    previous = os.umask(0o022)
    yield os.umask
    os.umask(previous)


@pytest.mark.parametrize(
    ("mask", "directory", "file"),
    [(0o077, 0o700, 0o600), (0o022, 0o755, 0o644)],
    ids=["make-run-umask", "usual-umask"],
)
def test_the_converted_model_takes_its_modes_from_the_umask(
    tmp_path, monkeypatch, umask, mask, directory, file
):
    # The module _convert will import now: an earlier test may have re-imported transformers,
    # leaving a module-level reference pointing at a stale copy.
    transformers = importlib.import_module("transformers")
    monkeypatch.setattr(transformers, "AutoModelForCausalLM", _Saved)
    monkeypatch.setattr(transformers, "AutoTokenizer", _Saved)
    umask(mask)
    target = tmp_path / "data" / "models" / models.EMBEDDED_NAME
    models._convert(tmp_path / "model.gguf", target)
    modes = {
        p.name: stat.S_IMODE(p.stat().st_mode) for p in [target.parent, *target.parent.rglob("*")]
    }
    assert set(modes) == {
        "models",
        models.EMBEDDED_NAME,
        "config.json",
        "model.safetensors",
        "tokenizer.json",
    }  # renamed into place: no temporary directory left
    assert modes == {
        name: directory if name in ("models", models.EMBEDDED_NAME) else file for name in modes
    }
