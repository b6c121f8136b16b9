"""The compiled CPU dense draw: exact words, valid noise bounds, the full scan's token."""

from __future__ import annotations

import pytest
import torch

from kernels import cpu_scan, philox
from kernels import gumbel_sample as gumbel_module
from kernels.gumbel_sample import gumbel_noise
from kernels.utils import keys_tensor
from tests.kernels.rows import adversarial_rows


def _state(b: int, vocab: int, gen: torch.Generator):
    keys = keys_tensor([(0x9E3779B97F4A7C15 * (i + 1)) % 2**64 for i in range(b)])
    contexts = torch.randint(-1, vocab, (b, 4), generator=gen)
    return keys, philox.context_state(keys, contexts)


def test_bucket_bounds_hold_for_every_24_bit_uniform() -> None:
    # Exhaustive: all 2**24 mantissas, through upstream's float32 noise.
    m = torch.arange(1 << 24, dtype=torch.int64)
    noise = gumbel_noise(philox.uniform(m << 8))
    bucket = m >> (24 - cpu_scan.BUCKET_BITS)
    assert bool((noise >= cpu_scan.LO[bucket]).all()) and bool((noise <= cpu_scan.HI[bucket]).all())


@pytest.mark.parametrize("compiled", [True, False])
def test_the_scan_computes_the_exact_prf_words(compiled: bool, gen) -> None:
    vocab = 1023  # not a multiple of 4: the last group is cut
    keys, state = _state(3, vocab, gen)
    k0, k1 = philox.key_words(keys)
    st = torch.stack(state, dim=1)
    tk = torch.stack((k0 ^ st[:, 3], k1 ^ philox.TOKEN_TAG), dim=1)
    x = torch.randn(3, vocab, generator=gen)
    scan = cpu_scan._scanner() if compiled else cpu_scan._scan
    words, lower, upper = scan(x, st, tk, cpu_scan.LO, cpu_scan.HI)
    expected = philox.vocab_words(keys, state, vocab)
    assert torch.equal(words.to(torch.int64) & 0xFFFFFFFF, expected)
    noise = gumbel_noise(philox.uniform(expected))
    assert bool((lower <= x + noise).all()) and bool((x + noise <= upper).all())


def test_the_compiled_scan_is_in_use() -> None:
    # A silent fallback to the eager scan would keep the tokens but lose the speed.
    cpu_scan.warm_up()
    assert cpu_scan._scanner() is not cpu_scan._scan


@pytest.mark.parametrize("vocab", [1, 3, 1023, 49152])
def test_dense_and_logit_pruned_draws_equal_the_full_scan(vocab: int, gen) -> None:
    for row in adversarial_rows(vocab, gen):
        x = gumbel_module._clean(row.expand(5, -1))
        keys, state = _state(5, vocab, gen)
        full = gumbel_module._full_scan(x, keys, state)
        assert torch.equal(cpu_scan.dense_draw(x, keys, state), full)
        assert torch.equal(gumbel_module._pruned(x, keys, state), full)  # the CUDA torch path


def test_a_single_row_is_drawn_like_a_batch_row(gen) -> None:
    x = torch.randn(4, 49152, generator=gen) * 3
    keys, state = _state(4, 49152, gen)
    batch = cpu_scan.dense_draw(x, keys, state)
    one = [
        int(cpu_scan.dense_draw(x[i : i + 1], keys[i : i + 1], tuple(s[i : i + 1] for s in state)))
        for i in range(4)
    ]
    assert batch.tolist() == one
