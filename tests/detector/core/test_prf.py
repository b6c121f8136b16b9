from __future__ import annotations

import hashlib

import numpy as np
import pytest

from detector.core import prf
from tests.detector import reference

UPSTREAM_VECTOR = [  # docs/spec.md §1: key 42, w = 4
    ((1, 2, 3, 4), 7, 425429266),
    ((1, 2, 3, 4), 8, 2706218805),
    ((4, 5, 6, 7), 7, 2494036831),
    ((4, 5, 6, 7), 8, 3424185538),
]

# Random123 known-answer vectors for philox4x32-10 (kat_vectors): counter, key, output.
RANDOM123_KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


@pytest.mark.parametrize("counter,key,expected", RANDOM123_KAT)
def test_philox_matches_the_random123_known_answers(counter, key, expected):
    assert tuple(int(x) for x in prf.philox4x32_10([counter], key[0], key[1])[0]) == expected
    assert reference.philox(counter, key) == expected


def test_it_reproduces_the_published_upstream_vector():
    contexts = [c for c, _, _ in UPSTREAM_VECTOR]
    tokens = [t for _, t, _ in UPSTREAM_VECTOR]
    words = prf.uint32(42, contexts, tokens)
    assert [int(w) for w in words] == [w for _, _, w in UPSTREAM_VECTOR]
    assert [int(w) >> 8 for w in words] == [1661833, 10571167, 9742331, 13375724]
    assert [reference.prf_word(42, list(c), t) for c, t, _ in UPSTREAM_VECTOR] == [
        w for _, _, w in UPSTREAM_VECTOR
    ]


@pytest.mark.parametrize("width", [1, 3, 4, 5, 16])
def test_it_matches_the_scalar_reference_on_thousands_of_random_keys(width):
    rng = np.random.default_rng(width)
    n = 2000
    keys = [int(k) for k in rng.integers(0, 2**64, size=n, dtype=np.uint64)]
    keys[:2] = [0, 2**64 - 1]
    contexts = rng.integers(-1, 2**31, size=(n, width))
    contexts[rng.random((n, width)) < 0.2] = -1  # padding anywhere, as at the start of a text
    tokens = rng.integers(0, 2**31, size=n)
    tokens[:8] = [0, 1, 2, 3, 4, 2**31 - 1, 2**31 - 4, 49151]
    got = [
        int(prf.uint32(k, contexts[i : i + 1], tokens[i : i + 1])[0]) for i, k in enumerate(keys)
    ]
    rows = zip(keys, contexts, tokens, strict=True)
    want = [reference.prf_word(k, list(c), int(t)) for k, c, t in rows]
    assert got == want


def test_one_key_over_many_rows_matches_the_scalar_reference():
    rng = np.random.default_rng(99)
    contexts = rng.integers(-1, 2**31, size=(3000, 4))
    tokens = rng.integers(0, 2**31, size=3000)
    got = prf.uint32(2**63 + 12345, contexts, tokens)
    assert [int(g) for g in got] == [
        reference.prf_word(2**63 + 12345, list(c), int(t))
        for c, t in zip(contexts, tokens, strict=True)
    ]


def test_it_processes_more_rows_than_one_chunk_consistently():
    rng = np.random.default_rng(7)
    n = 3 * prf._CHUNK + 17
    contexts = rng.integers(-1, 50000, size=(n, 4))
    tokens = rng.integers(0, 50000, size=n)
    whole = prf.uint32(123456789, contexts, tokens)
    picks = rng.integers(0, n, size=200)
    assert [int(whole[i]) for i in picks] == [
        reference.prf_word(123456789, list(contexts[i]), int(tokens[i])) for i in picks
    ]


def test_token_ids_are_taken_modulo_two_to_the_32():
    ctx = np.array([[1, 2, 3, 4]])
    assert prf.uint32(5, ctx, [2**32 + 7])[0] == prf.uint32(5, ctx, [7])[0]


def test_uniforms_lie_strictly_inside_the_unit_interval_at_the_extremes():
    u = prf.uniform(np.array([0, 255, 2**32 - 1], dtype=np.uint32))
    assert u.dtype == np.float32
    assert u[0] == u[1] == np.nextafter(np.float32(2**-24), np.float32(0))
    assert u[2] == np.float32(1 - 2**-24)
    assert 0.0 < u.min() and u.max() < 1.0


def test_uniform_equals_the_stepped_down_float32_form_for_every_mantissa_sample():
    m = np.arange(0, 2**24, 997, dtype=np.uint64)
    words = (m << np.uint64(8)).astype(np.uint32)
    stepped = np.nextafter(((m + 1) * 2.0**-24).astype(np.float32), np.float32(0))
    assert np.array_equal(prf.uniform(words), stepped)
    assert [reference.uniform(int(w)) for w in words[:50]] == list(prf.uniform(words[:50]))


def test_derive_key_is_the_sha256_prefix_of_domain_and_big_endian_master():
    for master in (0, 42, 2**64 - 1):
        digest = hashlib.sha256(b"key_a" + master.to_bytes(8, "big")).digest()
        assert prf.derive_key(master, b"key_a") == int.from_bytes(digest[:8], "big")
    assert prf.derive_key(42, b"key_a") != prf.derive_key(42, b"key_b")


@pytest.mark.parametrize("bad", [-1, 2**64, 1.5, "42", True])
def test_it_rejects_keys_outside_64_bits(bad):
    with pytest.raises(ValueError) as err:
        prf.uint32(bad, [[1, 2, 3, 4]], [1])
    assert str(bad) not in str(err.value) or bad is True


def test_it_rejects_mismatched_shapes():
    with pytest.raises(ValueError):
        prf.uint32(1, [[1, 2, 3, 4]], [1, 2])
    with pytest.raises(ValueError):
        prf.uint32(1, [1, 2, 3, 4], [1])


@pytest.mark.vllm
def test_it_matches_vllms_own_philox_prf():
    torch = pytest.importorskip("torch")
    philox = pytest.importorskip("vllm.v1.watermarking.prfs.philox")
    rng = np.random.default_rng(3)
    for key in (42, 2**64 - 1, int(rng.integers(0, 2**63))):
        for width in (1, 4, 5):
            contexts = rng.integers(-1, 49152, size=(64, width))
            tokens = rng.integers(0, 49152, size=64)
            theirs = (
                philox.PhiloxPRF(key)
                .uniform(torch.tensor(contexts), torch.tensor(tokens).unsqueeze(-1))
                .squeeze(-1)
            )
            ours = prf.uniform(prf.uint32(key, contexts, tokens))
            assert np.array_equal(theirs.numpy(), ours)
