"""Generation-time de-duplication mask against a plain-Python statement of the rule."""

from __future__ import annotations

import pytest
import torch

from kernels.repeated_context import repeated_context, repeated_context_reference
from tests.kernels.conftest import requires_cuda


def by_the_rule(history: list[int], context: list[int], max_history: int | None) -> bool:
    """Position p was generated after the w tokens before it (-1 before the start)."""
    w = len(context)
    padded = [-1] * w + history
    first = 0 if max_history is None else max(0, len(history) - max_history)
    return any(padded[p : p + w] == context for p in range(first, len(history)))


def cases(gen: torch.Generator, rows: int = 24, h: int = 60, w: int = 2):
    history = torch.randint(0, 3, (rows, h), generator=gen)  # tiny alphabet: many repeats
    lens = torch.randint(0, h + 1, (rows,), generator=gen)
    lens[:3] = torch.tensor([0, 1, h])
    contexts = torch.randint(0, 3, (rows, w), generator=gen)
    contexts[3, 0] = -1  # a context still inside the start padding
    return history, lens, contexts


@pytest.mark.parametrize("max_history", [None, 1, 3, 8, 1000])
def test_reference_follows_the_rule(max_history: int | None, gen) -> None:
    history, lens, contexts = cases(gen)
    got = repeated_context_reference(history, lens, contexts, max_history)
    want = [
        by_the_rule(history[r, : lens[r]].tolist(), contexts[r].tolist(), max_history)
        for r in range(history.shape[0])
    ]
    assert got.tolist() == want and any(want) and not all(want)


def test_a_padded_context_matches_the_start_of_the_history() -> None:
    history = torch.tensor([[5, 6, 7, 0]])
    contexts = torch.tensor([[-1, 5]])  # the context that generated token 6
    assert repeated_context(history, torch.tensor([3]), contexts).tolist() == [True]
    assert repeated_context(history, torch.tensor([1]), contexts).tolist() == [False]


def test_it_rejects_malformed_inputs(gen) -> None:
    history, lens, contexts = cases(gen)
    with pytest.raises(ValueError):
        repeated_context(history.float(), lens, contexts)
    with pytest.raises(ValueError):
        repeated_context(history, lens + 100, contexts)
    with pytest.raises(ValueError):
        repeated_context(history, lens, contexts, max_history=0)


@pytest.mark.parametrize("max_history", [None, 3, 300])
def test_kernel_equals_reference(interpret, max_history: int | None, gen) -> None:
    history, lens, contexts = cases(gen, rows=12, h=600, w=3)  # several 256-position blocks
    history[:, 300:] = history[:, :300]  # long-range repeats
    got = interpret(
        "kernels.repeated_context",
        "repeated_context",
        history,
        lens,
        contexts,
        max_history,
        backend="triton",
    )
    assert torch.equal(got, repeated_context_reference(history, lens, contexts, max_history))


@pytest.mark.gpu
@requires_cuda
def test_gpu_kernel_equals_reference(gen) -> None:
    history, lens, contexts = cases(gen, rows=64, h=9000, w=4)
    for max_history in (None, 8192, 5):
        got = repeated_context(history.cuda(), lens.cuda(), contexts.cuda(), max_history).cpu()
        assert torch.equal(got, repeated_context_reference(history, lens, contexts, max_history))
