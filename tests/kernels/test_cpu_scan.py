"""The compiled CPU draw: exact words and context states, valid noise bounds, exactly the tokens
that can still win, the full scan's token."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import torch

from kernels import cpu_scan, philox
from kernels import gumbel_sample as gumbel_module
from kernels.gumbel_sample import gumbel_noise
from kernels.utils import njit_cached
from tests.kernels.prf_words import keys_tensor
from tests.kernels.rows import adversarial_rows

BIG_KEYS = [0, 1, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1]


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


@pytest.mark.parametrize("width", [1, 3, 4, 5, 8, 9])
def test_compiled_context_states_equal_the_reference(width: int, gen) -> None:
    keys = keys_tensor(BIG_KEYS)
    # -1 padding, ordinary ids and ids past 2**32 (taken modulo 2**32, as upstream)
    contexts = torch.randint(-1, 2**40, (len(BIG_KEYS), width), generator=gen)
    contexts[:, 0] = -1
    expected = torch.stack(philox._context_state_torch(keys, contexts), dim=1)  # CUDA's path
    got = philox.context_states_cpu(keys.numpy(), contexts.numpy())
    assert torch.equal(torch.from_numpy(got), expected)


@pytest.mark.parametrize("vocab", [64, 1023, 4099])
def test_compiled_chunk_words_are_the_prf_words(vocab: int, gen) -> None:
    keys = keys_tensor(BIG_KEYS)
    state = philox.context_state(keys, torch.randint(-1, vocab, (len(BIG_KEYS), 4), generator=gen))
    expected = philox.vocab_words(keys, state, vocab)
    token_keys = cpu_scan._token_keys(keys.numpy(), torch.stack(state, dim=1).numpy())
    words = np.empty(cpu_scan.CHUNK, np.uint32)
    for r in range(len(BIG_KEYS)):
        s = [int(w[r]) for w in state]
        for chunk in range((vocab + cpu_scan.CHUNK - 1) // cpu_scan.CHUNK):
            cpu_scan._chunk_words(chunk, *s[:3], *token_keys[r].tolist(), words)
            base = chunk * cpu_scan.CHUNK
            want = expected[r, base : base + cpu_scan.CHUNK].numpy()
            assert np.array_equal(words[: len(want)].astype(np.int64), want)


@pytest.mark.parametrize("vocab", [1, 3, 1023, 49152])
def test_candidates_are_exactly_the_tokens_that_can_still_win(vocab: int, gen) -> None:
    rows = [r for r in adversarial_rows(vocab, gen) if not bool(r.isnan().any())]
    x = torch.stack(rows + [torch.randn(vocab, generator=gen) * 4 for _ in range(3)])
    keys, state = _state(x.shape[0], vocab, gen)
    words = philox.vocab_words(keys, state, vocab)
    bucket = words >> (32 - cpu_scan.BUCKET_BITS)
    lower, upper = x + cpu_scan.LO[bucket], x + cpu_scan.HI[bucket]
    keep = upper >= lower.amax(dim=-1, keepdim=True)  # the definition, over the whole row
    row, col, word, logit = cpu_scan.candidates(x, keys, torch.stack(state, dim=1).numpy())
    expected = [tuple(p) for p in keep.nonzero().tolist()]
    assert sorted(zip(row.tolist(), col.tolist(), strict=True)) == expected
    assert np.array_equal(word, words[row, col].numpy())
    assert np.array_equal(logit, x[row, col].numpy())
    winners = gumbel_module._full_scan(gumbel_module._clean(x), keys, state)
    assert set(enumerate(winners.tolist())) <= set(zip(row.tolist(), col.tolist(), strict=True))


def test_a_flat_row_overflows_the_first_buffer_and_is_retried(gen) -> None:
    x = torch.full((2, 4096), float("-inf"))  # every token ties at -inf: all are candidates
    keys, state = _state(2, 4096, gen)
    row, _, _, _ = cpu_scan.candidates(x, keys, torch.stack(state, dim=1).numpy())
    assert len(row) == 2 * 4096 > 64 * 2
    assert cpu_scan.dense_draw(x, keys, state).tolist() == [0, 0]


@pytest.mark.parametrize("vocab", [1, 3, 1023, 49152])
def test_compiled_draws_equal_the_full_scan(vocab: int, gen) -> None:
    for row in adversarial_rows(vocab, gen):
        x = gumbel_module._clean(row.expand(5, -1))
        keys = keys_tensor(BIG_KEYS[:5])
        contexts = torch.randint(-1, vocab, (5, 4), generator=gen)
        state = philox.context_state(keys, contexts)
        full = gumbel_module._full_scan(x, keys, state)
        assert torch.equal(cpu_scan.dense_draw(x, keys, state), full)
        assert torch.equal(gumbel_module._keyed_reference(x, keys, contexts, True), full)


def test_a_single_row_is_drawn_like_a_batch_row(gen) -> None:
    x = torch.randn(4, 49152, generator=gen) * 3
    keys, state = _state(4, 49152, gen)
    batch = cpu_scan.dense_draw(x, keys, state)
    one = [
        int(cpu_scan.dense_draw(x[i : i + 1], keys[i : i + 1], tuple(s[i : i + 1] for s in state)))
        for i in range(4)
    ]
    assert batch.tolist() == one


def test_without_a_writable_cache_location_the_draw_compiles_uncached(monkeypatch) -> None:
    # Numba refuses cache=True at decoration when no cache directory is writable (a read-only
    # install without a home); the module must still import and run.
    real = numba.njit
    calls: list[bool] = []

    def njit(*args, cache=False, **kwargs):
        calls.append(cache)
        if cache:
            raise RuntimeError("cannot cache function 'f': no locator available for file 'f.py'")
        return real(*args, **kwargs)

    monkeypatch.setattr(numba, "njit", njit)
    add_one = njit_cached()(lambda x: x + 1)
    assert add_one(41) == 42 and calls == [True, False]
