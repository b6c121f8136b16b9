"""Generation-time context de-duplication: is each row's current context already in its history?

``history`` ``[B, H]`` holds each row's searched tokens (the generated tokens for
``"single_turn"``, prompt plus generated for ``"all"``: the caller picks), valid up to
``history_lens`` ``[B]``; ``contexts`` ``[B, w]`` is the context about to be used (-1 padded).
Position p of the history was generated under the context of the w tokens before it (-1
before the history's start); the row is repeated when one of the last ``max_history``
positions (all when None) had the current context. Upstream's policy on top of this mask
(the first w tokens of ``"all"`` are always plain) is the generator's.
"""

from __future__ import annotations

import torch

from kernels.utils import Backend, tl, triton, use_kernel

_BLOCK = 256  # history positions per kernel iteration


def _check(
    history: torch.Tensor, lens: torch.Tensor, contexts: torch.Tensor, max_history: int | None
) -> None:
    if history.ndim != 2 or history.dtype.is_floating_point:
        raise ValueError("history must be an integer [B, H] tensor")
    b, h = history.shape
    if lens.shape != (b,) or lens.dtype.is_floating_point:
        raise ValueError(f"history_lens must be an integer [{b}] tensor")
    if contexts.ndim != 2 or contexts.shape[0] != b or contexts.shape[1] < 1:
        raise ValueError(f"contexts must be [{b}, w] with w >= 1")
    if b and (bool((lens < 0).any()) or bool((lens > h).any())):
        raise ValueError("history_lens must lie in [0, H]")
    if max_history is not None and (isinstance(max_history, bool) or max_history < 1):
        raise ValueError("max_history must be a positive integer or None")


def repeated_context_reference(
    history: torch.Tensor,
    history_lens: torch.Tensor,
    contexts: torch.Tensor,
    max_history: int | None = None,
) -> torch.Tensor:
    """Pure torch: bool ``[B]``. Memory O(B * H) bools (the windows are a view)."""
    _check(history, history_lens, contexts, max_history)
    b, h = history.shape
    w = contexts.shape[1]
    pad = torch.full((b, w), -1, dtype=torch.int64, device=history.device)
    padded = torch.cat([pad, history.to(torch.int64)], dim=1)  # [B, w + H]
    windows = padded.unfold(1, w, 1)[:, :h]  # [B, H, w]: context of each position (view)
    same = (windows == contexts.to(torch.int64)[:, None, :]).all(dim=-1)  # [B, H]
    pos = torch.arange(h, device=history.device)
    lens = history_lens.to(torch.int64)[:, None]
    first = (lens - max_history).clamp_min(0) if max_history is not None else torch.zeros_like(lens)
    return (same & (pos < lens) & (pos >= first)).any(dim=-1)


def repeated_context(
    history: torch.Tensor,
    history_lens: torch.Tensor,
    contexts: torch.Tensor,
    max_history: int | None = None,
    *,
    backend: Backend = "auto",
) -> torch.Tensor:
    """bool ``[B]``: True where the row's context already occurred (sample it plain)."""
    _check(history, history_lens, contexts, max_history)
    if not use_kernel(history, backend):
        return repeated_context_reference(history, history_lens, contexts, max_history)
    b, h = history.shape
    out = torch.empty(b, dtype=torch.int8, device=history.device)
    if b == 0:
        return out.bool()
    history = history.to(torch.int64).contiguous()
    lens = history_lens.to(torch.int64).contiguous()
    ctx = contexts.to(torch.int64).contiguous()
    _repeated_context_kernel[(b,)](
        history,
        h,
        lens,
        ctx,
        out,
        0 if max_history is None else max_history,
        W=contexts.shape[1],
        BLOCK=_BLOCK,
    )
    return out.bool()


@triton.jit
def _repeated_context_kernel(
    hist_ptr, H, lens_ptr, ctx_ptr, out_ptr, max_history, W: tl.constexpr, BLOCK: tl.constexpr
):
    """One program per row: scan the window of history positions, OR of exact context matches."""
    row = tl.program_id(0).to(tl.int64)
    n = tl.load(lens_ptr + row)
    first = n * 0
    if max_history > 0:
        first = tl.maximum(n - max_history, 0)
    found = tl.zeros((BLOCK,), tl.int32)
    lanes = tl.arange(0, BLOCK)
    for base in range((first // BLOCK) * BLOCK, n, BLOCK):
        pos = base + lanes
        match = (pos >= first) & (pos < n)
        for j in tl.static_range(W):
            q = pos - W + j  # history index of context slot j; -1 padding before 0
            tok = tl.load(hist_ptr + row * H + q, mask=match & (q >= 0), other=-1)
            match = match & (tok == tl.load(ctx_ptr + row * W + j))
        found = found | match.to(tl.int32)
    tl.store(out_ptr + row, (tl.max(found, axis=0) > 0).to(tl.int8))
