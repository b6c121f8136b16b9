"""The compiled PRF (``detector.core.compiled_prf``) gives numpy's uniforms bit for bit, from
a context array or straight from the ids."""

from __future__ import annotations

import numpy as np
import pytest

from detector.core import compiled_prf, prf
from detector.core.contexts import COMPILED_FROM, build_contexts


@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 8, 9])
@pytest.mark.parametrize("high", [49152, 2**32])
def test_the_compiled_prf_gives_numpys_uniforms_bit_for_bit(width, high):
    rng = np.random.default_rng(width)
    ids = rng.integers(0, high, size=COMPILED_FROM + 3000)
    contexts = build_contexts(ids, width)
    mask = rng.random(ids.shape[0]) < 0.6
    for key in (0, 42, 2**63 + 12345, 2**64 - 1):
        want = prf.uniform(prf.uint32(key, contexts[mask], ids[mask]))
        got = compiled_prf.uniforms(key, contexts, ids, mask)
        assert got.dtype == np.float32 and np.array_equal(got.view(np.uint32), want.view(np.uint32))
        whole = prf.uniform(prf.uint32(key, contexts, ids))
        assert np.array_equal(compiled_prf.uniforms(key, contexts, ids, np.ones_like(mask)), whole)


@pytest.mark.parametrize("width", [1, 4, 5, 9])
def test_spread_uniforms_are_the_masked_rows_uniforms_in_place(width):
    rng = np.random.default_rng(width)
    ids = rng.integers(0, 2**32, COMPILED_FROM + 777)
    mask = rng.random(ids.shape[0]) < 0.7
    for key in (0, 2**64 - 1, 0x5EED):
        got = compiled_prf.spread_uniforms(key, ids, width, mask)
        assert got.dtype == np.float64 and not got[~mask].any()
        want = compiled_prf.uniforms(key, build_contexts(ids, width), ids, mask)
        assert np.array_equal(got[mask], want.astype(np.float64))
