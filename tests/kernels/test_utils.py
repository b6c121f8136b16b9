"""Import guard and backend choice."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kernels.utils import use_kernel

ROOT = Path(__file__).resolve().parents[2]

WITHOUT_TRITON = """
import sys
sys.modules["triton"] = None  # any "import triton" now raises ImportError
import torch
from kernels import gumbel_sample, score_tokens, utils
from tests.kernels.prf_words import keys_tensor
assert not utils.HAS_TRITON
logits = torch.zeros(2, 10)
ctx, mask = torch.zeros(2, 4, dtype=torch.int64), torch.ones(2, dtype=torch.bool)
ids = gumbel_sample.gumbel_sample(logits, keys_tensor([1, 2]), ctx, mask)
scores = score_tokens.score_tokens(torch.arange(5), torch.tensor([0, 5]), keys_tensor([3]))
assert ids.shape == (2,) and scores.shape == (5,)
try:
    gumbel_sample.gumbel_sample(logits, keys_tensor([1, 2]), ctx, mask, backend="triton")
except RuntimeError as exc:
    assert "not installed" in str(exc)
else:
    raise AssertionError("backend='triton' without triton must fail")
print("ok")
"""


def test_everything_imports_and_runs_the_references_without_triton() -> None:
    out = subprocess.run(
        [sys.executable, "-c", WITHOUT_TRITON],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


def test_auto_takes_the_reference_on_cpu_tensors() -> None:
    assert use_kernel(torch.zeros(1), "auto") is False
    assert use_kernel(torch.zeros(1), "torch") is False
    with pytest.raises(ValueError):
        use_kernel(torch.zeros(1), "numpy")
