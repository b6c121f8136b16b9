"""The keyed Gumbel sampler: pruned == full scan == upstream vLLM == Triton kernel."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import chisquare

from kernels import gumbel_sample as gumbel_module
from kernels.gumbel_sample import gumbel_sample, gumbel_sample_reference
from kernels.utils import interpreter_on
from tests.kernels.conftest import requires_cuda
from tests.kernels.prf_words import keys_tensor
from tests.kernels.rows import adversarial_rows, extreme_row, tie_pair

KEY_POOL = [0, 42, 2**63, 2**64 - 1, 0x0123456789ABCDEF, 2**32 + 7]


def batch(rows: list[torch.Tensor], gen: torch.Generator, width: int = 4):
    """(logits, keys, contexts) for rows, cycling through keys ≥ 2**63 and small ones."""
    b = len(rows)
    keys = keys_tensor([(KEY_POOL[i % len(KEY_POOL)] + i) % 2**64 for i in range(b)])
    contexts = torch.randint(-1, 50_000, (b, width), generator=gen)
    return torch.stack(rows), keys, contexts


def all_marked(b: int) -> torch.Tensor:
    return torch.ones(b, dtype=torch.bool)


def pruned_and_full(
    logits: torch.Tensor, gen: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    _, keys, contexts = batch(list(logits), gen)
    mask = all_marked(logits.shape[0])
    return (
        gumbel_sample_reference(logits, keys, contexts, mask),
        gumbel_sample_reference(logits, keys, contexts, mask, prune=False),
    )


@pytest.mark.parametrize("vocab", [1, 3, 1023, 49152])
@pytest.mark.parametrize("kind", range(10))
def test_pruned_draw_equals_the_full_scan_on_adversarial_rows(vocab: int, kind: int, gen) -> None:
    # One row kind per batch, under six keys: sparse kinds take the pruned path throughout.
    row = adversarial_rows(vocab, gen)[kind]
    pruned, full = pruned_and_full(row.expand(6, -1), gen)
    assert torch.equal(pruned, full)


@pytest.mark.parametrize("vocab", [1023, 49152, 151936])
def test_pruned_draw_equals_the_full_scan_in_mixed_batches(vocab: int, gen) -> None:
    # Fewer than half the rows need the full scan: both paths run in one call.
    rows = adversarial_rows(vocab, gen)
    flat, peaked, edge, topk, infs = rows[0], rows[1], rows[2], rows[4], rows[6]
    logits = torch.stack([peaked, flat, topk, infs, peaked, edge, topk])
    pruned, full = pruned_and_full(logits, gen)
    assert torch.equal(pruned, full)


def test_peaked_rows_never_take_the_full_scan(gen, monkeypatch) -> None:
    rows = adversarial_rows(49152, gen)
    logits, keys, contexts = batch([rows[1], rows[4], rows[6]] * 2, gen)  # peaked, top-k, +inf
    mask = all_marked(6)
    expected = gumbel_sample_reference(logits, keys, contexts, mask, prune=False)

    def refuse(*_: object) -> torch.Tensor:
        raise AssertionError("the full scan ran")

    monkeypatch.setattr(gumbel_module, "_full_scan", refuse)
    assert torch.equal(gumbel_sample_reference(logits, keys, contexts, mask), expected)


def test_pruning_keeps_a_winner_just_inside_the_bound() -> None:
    # The winner sits ~0.3 nats below the bar: a bound that much tighter would lose it.
    context, row, winner = extreme_row(99, 49152, contexts=1024)
    args = (row[None], keys_tensor([99]), torch.tensor([context]), all_marked(1))
    assert gumbel_sample_reference(*args, prune=False).tolist() == [winner]
    assert gumbel_sample_reference(*args).tolist() == [winner]


@pytest.mark.parametrize("slope", [1.0, 2.0, 3.0, 4.0])
def test_pruned_draw_equals_the_full_scan_on_lm_like_rows(slope: float, gen) -> None:
    vocab = 49152
    ranks = torch.arange(1, vocab + 1).float()
    rows = [(-slope * ranks.log())[torch.randperm(vocab, generator=gen)] for _ in range(8)]
    pruned, full = pruned_and_full(torch.stack(rows), gen)
    assert torch.equal(pruned, full)


@pytest.mark.parametrize("prune", [True, False])
def test_exact_ties_go_to_the_lowest_id(prune: bool) -> None:
    key, context, vocab = 99, [1, 2, 3, 4], 49152
    low, high = tie_pair(key, context, vocab)
    row = torch.full((vocab,), float("-inf"))
    row[[low, high]] = 1.5
    got = gumbel_sample_reference(
        row[None], keys_tensor([key]), torch.tensor([context]), all_marked(1), prune=prune
    )
    assert got.tolist() == [low]


@pytest.mark.parametrize("prune", [True, False])
def test_all_neg_inf_and_all_nan_rows_return_token_zero(prune: bool, gen) -> None:
    rows = [torch.full((7,), float("-inf")), torch.full((7,), float("nan"))]
    logits, keys, contexts = batch(rows, gen)
    got = gumbel_sample_reference(logits, keys, contexts, all_marked(2), prune=prune)
    assert got.tolist() == [0, 0]


def test_nan_logits_never_win(gen) -> None:
    row = torch.full((64,), float("nan"))
    row[[5, 40]] = -50.0
    logits, keys, contexts = batch([row] * 32, gen)
    got = gumbel_sample_reference(logits, keys, contexts, all_marked(32))
    assert set(got.tolist()) <= {5, 40}


def test_low_precision_logits_are_sampled_as_their_float32_values(gen) -> None:
    logits, keys, contexts = batch(adversarial_rows(1023, gen)[:6], gen)
    for dtype in (torch.bfloat16, torch.float16):
        low = logits.to(dtype)
        got = gumbel_sample_reference(low, keys, contexts, all_marked(6))
        assert torch.equal(got, gumbel_sample_reference(low.float(), keys, contexts, all_marked(6)))


@pytest.mark.vllm
@pytest.mark.parametrize("vocab", [1, 3, 1023, 49152, 151936])
def test_reference_matches_upstream_vllm_watermarker_token_for_token(vocab: int, gen) -> None:
    gumbel = pytest.importorskip("vllm.v1.watermarking.gumbel")
    for key in (42, 2**63 + 11, 2**64 - 1):
        rows = [torch.randn(vocab, generator=gen) * s for s in (0.5, 2.0, 6.0)]
        logits, _, contexts = batch(rows, gen)
        upstream = gumbel.GumbelWatermarker(key)._sample_watermarked(logits, contexts).token_ids
        ours = gumbel_sample_reference(logits, keys_tensor([key] * 3), contexts, all_marked(3))
        assert torch.equal(ours, upstream)


def test_plain_rows_take_the_provided_noise(gen) -> None:
    logits, keys, contexts = batch([torch.randn(500, generator=gen) for _ in range(6)], gen)
    noise = -torch.log(-torch.log(torch.rand(6, 500, generator=gen)))
    mask = torch.tensor([True, False, True, False, False, True])
    got = gumbel_sample(logits, keys, contexts, mask, fallback_noise=noise)
    keyed = gumbel_sample(logits, keys, contexts, all_marked(6))
    assert torch.equal(got[mask], keyed[mask])
    assert torch.equal(got[~mask], (logits + noise).argmax(dim=-1)[~mask])


def test_plain_rows_ignore_the_key_and_follow_the_generator(gen) -> None:
    logits, keys, contexts = batch([torch.zeros(4096) for _ in range(8)], gen)
    plain = torch.zeros(8, dtype=torch.bool)
    first = gumbel_sample(logits, keys, contexts, plain, generator=torch.Generator().manual_seed(5))
    other_keys = keys_tensor(list(range(100, 108)))
    again = gumbel_sample(
        logits, other_keys, contexts, plain, generator=torch.Generator().manual_seed(5)
    )
    assert torch.equal(first, again)
    keyed = gumbel_sample(logits, keys, contexts, all_marked(8))
    assert not torch.equal(first, keyed)


@pytest.mark.parametrize("marked", [True, False])
def test_draws_over_many_keys_follow_softmax(marked: bool, gen) -> None:
    """Non-distortion: keyed (or plain) draws over 6000 keys match softmax(logits)."""
    p = torch.tensor([0.4, 0.25, 0.15, 0.1, 0.07, 0.03])
    n = 6000
    logits = (p.log() + 3.0).expand(n, -1)  # a constant shift changes nothing
    keys = keys_tensor([(0x9E3779B97F4A7C15 * (i + 1)) % 2**64 for i in range(n)])
    contexts = torch.randint(-1, 50_000, (n, 4), generator=gen)
    mask = torch.full((n,), marked)
    got = gumbel_sample(logits, keys, contexts, mask, generator=torch.Generator().manual_seed(3))
    counts = np.bincount(got.numpy(), minlength=6)
    assert chisquare(counts, (p * n).numpy()).pvalue > 1e-3


def test_it_rejects_malformed_inputs(gen) -> None:
    logits, keys, contexts = batch([torch.zeros(10)] * 2, gen)
    mask = all_marked(2)
    bad_calls = [
        (logits[0], keys, contexts, mask),
        (logits, keys.to(torch.int32), contexts, mask),
        (logits, keys[:1], contexts, mask),
        (logits, keys, contexts[:, :0], mask),
        (logits, keys, contexts.float(), mask),
        (logits, keys, contexts, mask.int()),
    ]
    for args in bad_calls:
        with pytest.raises(ValueError):
            gumbel_sample(*args)
    with pytest.raises(ValueError):
        gumbel_sample(logits, keys, contexts, mask, fallback_noise=torch.zeros(2, 3))
    with pytest.raises(ValueError):
        gumbel_sample(logits, keys, contexts, mask, backend="cuda")  # type: ignore[arg-type]


@pytest.mark.skipif(interpreter_on(), reason="this process runs Triton's interpreter")
def test_forcing_the_kernel_on_cpu_without_the_interpreter_is_a_clear_error(gen) -> None:
    logits, keys, contexts = batch([torch.zeros(10)], gen)
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET"):
        gumbel_sample(logits, keys, contexts, all_marked(1), backend="triton")


# --- the Triton kernel, under the interpreter (CPU) -------------------------------------


@pytest.mark.parametrize("vocab", [1, 3, 1023])
def test_kernel_equals_reference_with_mixed_masks(interpret, vocab: int, gen) -> None:
    rows = adversarial_rows(vocab, gen)
    logits, keys, contexts = batch(rows, gen, width=5)
    mask = torch.arange(len(rows)) % 3 != 1
    expected = gumbel_sample_reference(
        logits, keys, contexts, mask, generator=torch.Generator().manual_seed(9)
    )
    got = interpret(
        "kernels.gumbel_sample",
        "gumbel_sample",
        logits,
        keys,
        contexts,
        mask,
        generator_seed=9,
        backend="triton",
    )
    assert torch.equal(got, expected)


def test_kernel_equals_reference_on_bf16_ties_and_noise(interpret, gen) -> None:
    key, context, vocab = 99, [1, 2, 3, 4], 49152
    low, high = tie_pair(key, context, vocab)
    tie = torch.full((vocab,), float("-inf"))
    tie[[low, high]] = 1.5
    row = torch.randn(vocab, generator=gen)
    logits = torch.stack([tie, row, row]).to(torch.bfloat16)
    keys = keys_tensor([key, 7, 7])
    contexts = torch.tensor([context, [0, 0, 0, 0], [0, 0, 0, 0]])
    mask = torch.tensor([True, True, False])
    noise = -torch.log(-torch.log(torch.rand(3, vocab, generator=gen)))
    expected = gumbel_sample_reference(logits, keys, contexts, mask, fallback_noise=noise)
    got = interpret(
        "kernels.gumbel_sample",
        "gumbel_sample",
        logits,
        keys,
        contexts,
        mask,
        fallback_noise=noise,
        backend="triton",
    )
    assert torch.equal(got, expected) and got[0].item() == low


def test_kernel_splits_a_row_across_programs_exactly(interpret, gen) -> None:
    # 17 tiles of 1024 on one row: two programs per row under the interpreter's heuristics.
    logits, keys, contexts = batch([torch.randn(16385, generator=gen) * 4], gen)
    got = interpret(
        "kernels.gumbel_sample",
        "gumbel_sample",
        logits,
        keys,
        contexts,
        all_marked(1),
        backend="triton",
    )
    assert torch.equal(got, gumbel_sample_reference(logits, keys, contexts, all_marked(1)))


# --- the Triton kernel on a GPU (each has its CPU twin above) ---------------------------


@pytest.mark.gpu
@requires_cuda
@pytest.mark.parametrize("vocab", [1, 3, 1023, 32000, 49152, 151936, 152064])
def test_gpu_kernel_equals_reference(vocab: int, gen) -> None:
    rows = adversarial_rows(vocab, gen) * 2
    logits, keys, contexts = batch(rows, gen)
    mask = torch.arange(len(rows)) % 4 != 3
    noise = -torch.log(-torch.log(torch.rand(len(rows), vocab, generator=gen)))
    expected = gumbel_sample_reference(logits, keys, contexts, mask, fallback_noise=noise)
    for dtype in (torch.float32, torch.bfloat16):
        dev = [t.cuda() for t in (logits.to(dtype), keys, contexts, mask, noise)]
        got = gumbel_sample(*dev[:4], fallback_noise=dev[4]).cpu()
        want = (
            expected
            if dtype == torch.float32
            else gumbel_sample_reference(
                logits.to(dtype), keys, contexts, mask, fallback_noise=noise
            )
        )
        assert torch.equal(got, want)
