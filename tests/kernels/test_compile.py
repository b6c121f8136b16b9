"""Every kernel compiles for an H100/H200 (sm_90) without a GPU: catches what the
interpreter forgives (types changing across loop iterations, non-constexpr branches)."""

from __future__ import annotations

import pytest

from kernels import gumbel_sample, score_tokens
from kernels.utils import HAS_TRITON, interpreter_on
from tests.kernels import prf_words

pytestmark = pytest.mark.skipif(
    not HAS_TRITON or interpreter_on(), reason="needs Triton in compile mode"
)

SAMPLER = {
    "logits_ptr": "*bf16",
    "logits_stride": "i64",
    "keys_ptr": "*i64",
    "ctx_ptr": "*i64",
    "ctx_stride": "i64",
    "use_noise_ptr": "*i8",
    "noise_ptr": "*fp32",
    "noise_stride": "i64",
    "part_val_ptr": "*fp32",
    "part_idx_ptr": "*i32",
    "V": "i32",
    "n_tiles": "i32",
    "tiles_per_split": "i32",
    "n_splits": "i32",
}
KERNELS = [
    (gumbel_sample._gumbel_sample_kernel, SAMPLER, {"W": 4, "BLOCK": 1024, "HAS_NOISE": False}),
    (gumbel_sample._gumbel_sample_kernel, SAMPLER, {"W": 5, "BLOCK": 1024, "HAS_NOISE": True}),
    (
        score_tokens._score_tokens_kernel,
        {
            "tok_ptr": "*i64",
            "doc_ptr": "*i64",
            "cu_ptr": "*i64",
            "keys_a_ptr": "*i64",
            "keys_b_ptr": "*i64",
            "weights_ptr": "*fp64",
            "out_ptr": "*fp64",
            "total": "i32",
        },
        {"W": 4, "DUAL": True, "BLOCK": 256},
    ),
    (
        prf_words._prf_words_kernel,
        {"keys_ptr": "*i64", "ctx_ptr": "*i64", "tok_ptr": "*i64", "out_ptr": "*i64", "n": "i32"},
        {"W": 4, "BLOCK": 128},
    ),
]


@pytest.mark.parametrize("kernel, signature, constexprs", KERNELS)
def test_kernel_compiles_to_ptx_for_sm90(kernel, signature, constexprs) -> None:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signature = signature | {name: "constexpr" for name in constexprs}
    src = ASTSource(fn=kernel, signature=signature, constexprs=constexprs)
    compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32))
    assert ".entry" in compiled.asm["ptx"]
