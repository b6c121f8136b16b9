"""The torch and Triton copies of the PRF against ``detector.core.prf`` and upstream's test
vector."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from detector.core import prf as reference_prf
from kernels import philox
from tests.kernels.prf_words import keys_tensor, uniform_by_division

ROOT = Path(__file__).resolve().parents[2]
KEYS = [0, 1, 42, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1, 0x0123456789ABCDEF]


def _numpy_words(keys: list[int], contexts: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    return np.concatenate(
        [
            reference_prf.uint32(k, contexts[i : i + 1], tokens[i : i + 1])
            for i, k in enumerate(keys)
        ]
    ).astype(np.int64)


def test_it_reproduces_the_upstream_vector() -> None:
    keys = keys_tensor([42] * 4)
    contexts = torch.tensor([[1, 2, 3, 4], [1, 2, 3, 4], [4, 5, 6, 7], [4, 5, 6, 7]])
    words = philox.prf_words(keys, contexts, torch.tensor([7, 8, 7, 8]))
    assert words.tolist() == [425429266, 2706218805, 2494036831, 3424185538]
    assert (words >> 8).tolist() == [1661833, 10571167, 9742331, 13375724]


@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 8, 9])
def test_torch_words_equal_detector_words(width: int) -> None:
    rng = np.random.default_rng(width)
    keys = [KEYS[i % len(KEYS)] for i in range(200)]
    contexts = rng.integers(-1, 160_000, (200, width))
    contexts[::7, : width // 2] = -1  # left padding as at the start of a text
    tokens = rng.integers(0, 2**33, 200)  # ids past 2**32 are taken mod 2**32
    got = philox.prf_words(keys_tensor(keys), torch.from_numpy(contexts), torch.from_numpy(tokens))
    assert np.array_equal(got.numpy(), _numpy_words(keys, contexts, tokens))


def test_vocab_words_cover_every_token_in_order() -> None:
    keys = keys_tensor([2**63 + 5, 7])
    contexts = torch.tensor([[-1, -1, 3, 9], [5, 6, 7, 8]])
    state = philox.context_state(keys, contexts)
    words = philox.vocab_words(keys, state, 1023)  # not a multiple of 4
    for row, key in enumerate([2**63 + 5, 7]):
        ids = np.arange(1023)
        ctx = np.repeat(contexts[row : row + 1].numpy(), 1023, axis=0)
        assert np.array_equal(
            words[row].numpy(), reference_prf.uint32(key, ctx, ids).astype(np.int64)
        )


def test_fast_uniform_equals_the_spec_division_for_every_mantissa() -> None:
    words = torch.arange(2**24, dtype=torch.int64) << 8 | 0xA5  # low bits must not matter
    assert torch.equal(philox.uniform(words), uniform_by_division(words))


def test_uniform_equals_detector_uniform() -> None:
    words = np.random.default_rng(0).integers(0, 2**32, 10_000, dtype=np.uint32)
    got = philox.uniform(torch.from_numpy(words.astype(np.int64)))
    assert np.array_equal(got.numpy(), reference_prf.uniform(words))


@pytest.mark.parametrize("width", [1, 4, 5])
def test_triton_words_equal_detector_words(interpret, width: int) -> None:
    rng = np.random.default_rng(10 + width)
    keys = [KEYS[i % len(KEYS)] for i in range(300)]  # 3 programs of 128 lanes, last partial
    contexts = rng.integers(-1, 200_000, (300, width))
    tokens = rng.integers(0, 2**33, 300)
    got = interpret(
        "tests.kernels.prf_words",
        "prf_words_kernel",
        keys_tensor(keys),
        torch.from_numpy(contexts),
        torch.from_numpy(tokens),
    )
    assert np.array_equal(got.numpy(), _numpy_words(keys, contexts, tokens))


@pytest.mark.parametrize("width", [1, 5])
def test_triton_prf_reads_nothing_past_the_contexts(width: int) -> None:
    # Lanes past n (the last program's tail) once loaded their "contexts" past the tensor's
    # end; with the contexts ending at an unreadable page such a load kills the process.
    code = f"from tests.kernels._interpreter import guarded_prf_words; guarded_prf_words({width})"
    env = {**os.environ, "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, timeout=300
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
