"""The model's reading through ONNX Runtime against the torch reading it must reproduce."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from detector.decision.family import decision_log10_p, flagged
from detector.evidence.detection import detect_ids
from detector.reading.model import TOP_K, ModelAssist, expected_score_of
from detector.reading.ort import (
    OrtAssist,
    ensure_exported,
    excess_from_top,
    export_dir,
    load_ort_assist,
)
from detector.text.tokenizers import load_tokenizer
from generator.models import embedded_model_dir
from tests.detector.planted import watermark_ids

pytestmark = [pytest.mark.model, pytest.mark.slow]

PROSE = (
    "The old lighthouse keeper climbed the spiral stairs every evening, counting the steps "
    "as his father had taught him. Ninety-one steps, a pause at the window, and then the "
    "lamp, which he polished with a cloth that smelled of salt and paraffin. The ships that "
    "passed never knew his name, and he preferred it that way."
)
KEY = 42
# Stated tolerance of the float32 ONNX Runtime reading against the float32 torch reading
# (same arithmetic, another order of summation): per token, and on the decision's log10 p.
TOLERANCE = 5e-3
LOG10_P_TOLERANCE = 0.02


def _tiny_model(path: Path, seed: int, vocab: int = 3000) -> Path:
    """A two-layer random Llama (vocabulary above TOP_K, so top-k and the tail both count)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():  # sharper than the random init: at T = 0.7 the 0.9 nucleus ends
        model.lm_head.weight.mul_(6.0)  # inside TOP_K at most positions, past it at some
    model.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The tiny model and a data directory of its own for its exports."""
    return _tiny_model(tmp_path_factory.mktemp("tiny"), 5), tmp_path_factory.mktemp("data")


@pytest.fixture
def tiny(tiny_model: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PROVENANCE_DATA_DIR", str(tiny_model[1]))
    return tiny_model[0]


def test_the_tail_series_equals_the_exact_sum_over_the_vocabulary() -> None:
    gen = torch.Generator().manual_seed(1)
    for scale in (0.5, 3.0, 9.0):
        z = scale * torch.randn(5, 4 * TOP_K, generator=gen, dtype=torch.float64)
        logp = z.log_softmax(-1)
        p = logp.exp()
        vals = z.topk(TOP_K, dim=-1).values
        got = excess_from_top(
            vals.numpy(),
            z.logsumexp(-1).numpy(),
            (p * logp).sum(-1).numpy(),
            (p * p).sum(-1).numpy(),
        )
        np.testing.assert_allclose(got, expected_score_of(p).numpy(), rtol=1e-9, atol=1e-9)


def test_float32_reads_the_tiny_model_as_torch_does(tiny: Path) -> None:
    ref = ModelAssist(tiny, window=64, context=16)
    ort = OrtAssist(tiny, window=64, context=16)
    assert ort.vocab_size == ref.vocab_size == 3000 and ort.prefix == ref.prefix == [1]
    with pytest.raises(ValueError, match="token ids"):
        ort.read([[5, 3000]])
    rng = np.random.default_rng(0)
    docs = [rng.integers(0, 3000, n) for n in (1, 5, 150)]
    for t, p in ((1.0, 1.0), (0.7, 0.9), (1.0, 0.5)):
        want = ref.read(docs, temperature=t, top_p=p)
        assert np.ptp(want[-1].expected) > 1.0  # certain and uncertain positions alike
        for x, y in zip(want, ort.read(docs, temperature=t, top_p=p), strict=True):
            np.testing.assert_allclose(y.expected, x.expected, rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(y.observed, x.observed, rtol=1e-4, atol=1e-4)


def test_the_export_is_kept_until_the_model_changes(tiny: Path, tmp_path: Path) -> None:
    graphs = ensure_exported(tiny)
    stamp = json.loads((graphs / "stamp.json").read_text())
    made = (graphs / "body.onnx").stat().st_mtime_ns
    assert ensure_exported(tiny) == graphs
    assert (graphs / "body.onnx").stat().st_mtime_ns == made
    assert graphs.is_relative_to(export_dir(tiny))
    other = _tiny_model(tmp_path / "model", seed=6)
    for name in ("config.json", "model.safetensors"):  # a new model in the same directory
        (tiny / name).write_bytes((other / name).read_bytes())
    again = ensure_exported(tiny)
    assert json.loads((again / "stamp.json").read_text())["model"] != stamp["model"]
    ref = ModelAssist(tiny).read([np.arange(3, 40)])[0]
    got = OrtAssist(tiny).read([np.arange(3, 40)])[0]
    np.testing.assert_allclose(got.expected, ref.expected, rtol=1e-4, atol=1e-4)


def test_int8_reads_with_quantized_linear_layers(tiny: Path) -> None:
    import onnx

    graphs = ensure_exported(tiny, "int8")
    ops = {n.op_type for n in onnx.load(str(graphs / "body.onnx")).graph.node}
    assert "DynamicQuantizeMatMul" in ops or "MatMulInteger" in ops
    assert not list(graphs.glob("body.float32*"))
    (got,) = OrtAssist(tiny, variant="int8").read([np.arange(3, 60)])
    assert got.expected.shape == (57,) and got.expected.min() >= 1.0
    assert got.observed.min() >= 1.0
    with pytest.raises(ValueError, match="variant"):
        ensure_exported(tiny, "int4")


def test_the_library_imports_without_onnxruntime() -> None:
    code = (
        "import sys; sys.modules['onnxruntime'] = None\n"
        "import detector, detector.reading.model, detector.reading.ort as o\n"
        "try:\n    o.OrtAssist('.')\nexcept o.OrtUnavailable as e:\n    print('refused', e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert "refused" in out.stdout and "onnxruntime" in out.stdout


@pytest.fixture(scope="module")
def embedded() -> tuple[ModelAssist, OrtAssist]:
    path = embedded_model_dir()
    return ModelAssist(path), load_ort_assist(str(path))


@pytest.mark.parametrize("kind", ["human", "watermarked"])
def test_float32_reads_the_embedded_model_within_the_stated_tolerance(
    embedded: tuple[ModelAssist, OrtAssist], kind: str
) -> None:
    ref, ort = embedded
    ids = load_tokenizer().encode_lazy(PROSE)[0] if kind == "human" else watermark_ids(KEY, 80, 2)
    for t, p in ((1.0, 1.0), (0.7, 0.9)):
        (x,) = ref.read([ids], temperature=t, top_p=p)
        (y,) = ort.read([ids], temperature=t, top_p=p)
        de, do = np.abs(x.expected - y.expected), np.abs(x.observed - y.observed)
        # Top-p may keep or drop a token at the nucleus's edge: allow that on one token.
        assert np.sort(de)[-2] <= TOLERANCE and np.sort(do)[-2] <= TOLERANCE
        assert de.mean() <= TOLERANCE / 5 and do.mean() <= TOLERANCE / 5
        d1 = detect_ids(ids, KEY, expected_scores=x.expected, observed_scores=x.observed)
        d2 = detect_ids(ids, KEY, expected_scores=y.expected, observed_scores=y.observed)
        assert abs(decision_log10_p(d1) - decision_log10_p(d2)) <= LOG10_P_TOLERANCE
        assert flagged(d1) == flagged(d2) == (kind == "watermarked")
