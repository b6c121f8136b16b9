"""One model reading per text for the observed-token weighting experiment.

For every token of every text, from the embedded SmolLM2 read after its BOS token (as
``detector.reading.model.ModelAssist`` reads), at temperature ``t`` and top-p ``p``:

- ``es``: ``E[s]`` of a token sampled from the model's distribution ``q`` there (the weight
  basis of today's weighted test, identical to ``ModelAssist.expected_scores``);
- ``qtop``: ``q`` of the observed token after temperature and top-p (0 when top-p drops it);
- ``qt``: the observed token's probability at temperature ``t`` without top-p.

Exact, but only the head of each row is sorted: the top ``K`` logits, with the full sort for
the rare rows whose nucleus is longer than ``K``. Cached as ``observed-<name>-<digest>.npz``
under ``$PROVENANCE_DATA_DIR/power``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from detector.core.sampling import top_k_top_p_mask
from detector.evidence.weighted import EULER_GAMMA
from detector.reading.model import ModelAssist, expected_score_of

K = 1024


def _rows(logits: Any, targets: Any, temperature: float, top_p: float) -> tuple[Any, Any, Any]:
    import torch

    logits = logits.to(torch.float64) / temperature
    logp = logits.log_softmax(-1)
    qt = logp.gather(1, targets[:, None]).exp()[:, 0]
    if top_p >= 1.0:
        probs = logp.exp()
        return expected_score_of(probs), qt, qt
    vals, idx = logp.topk(min(K, logp.shape[1]), dim=-1)  # descending
    p = vals.exp()
    above = p.cumsum(-1) - p  # mass strictly above each token
    keep = above < top_p
    keep[:, 0] = True
    es = torch.empty(logp.shape[0], dtype=torch.float64)
    qtop = torch.zeros(logp.shape[0], dtype=torch.float64)
    long = keep[:, -1]
    short = ~long
    if short.any():
        ps = torch.where(keep[short], p[short], torch.zeros_like(p[short]))
        ps = ps / ps.sum(-1, keepdim=True)
        inv = torch.where(ps > 0, ps.reciprocal(), torch.ones_like(ps))
        f = torch.special.digamma(inv + 1.0) + (EULER_GAMMA - 1.0)
        es[short] = 1.0 + torch.where(ps > 0, ps * f, torch.zeros_like(ps)).sum(-1).clamp_min(0)
        hit = idx[short] == targets[short][:, None]
        qtop[short] = (ps * hit).sum(-1)
    if long.any():
        full = top_k_top_p_mask(logits[long], None, top_p).softmax(-1)
        es[long] = 1.0 + expected_score_of(full)
        qtop[long] = full.gather(1, targets[long][:, None])[:, 0]
    return es, qtop, qt


def read(
    assist: ModelAssist, docs: Sequence[np.ndarray], temperature: float, top_p: float
) -> list[dict[str, np.ndarray]]:
    """Per document: ``es``, ``qtop``, ``qt`` of every token (token 0 after BOS included)."""
    import torch

    out = []
    for ids in docs:
        ids = np.asarray(ids, np.int64)
        n = ids.shape[0]
        res = {k: np.ones(n) for k in ("es", "qtop", "qt")}
        for _, a, b, seq in assist._windows(0, ids):
            with torch.inference_mode():
                x = torch.tensor([seq])
                hidden = assist.model.base_model(input_ids=x).last_hidden_state[0, -(b - a) :]
                logits = assist.model.get_output_embeddings()(hidden)
                es, qtop, qt = _rows(logits, torch.from_numpy(ids[a:b]), temperature, top_p)
            res["es"][a:b] = es.numpy()
            res["qtop"][a:b] = qtop.numpy()
            res["qt"][a:b] = qt.numpy()
        out.append(res)
    return out


def cached_read(
    name: str, docs: Sequence[np.ndarray], temperature: float, top_p: float
) -> list[dict[str, np.ndarray]]:
    from benchmarks.generations import cache_dir, fingerprint
    from detector.reading.model import load_assist
    from generator.models import resolve_model

    spec = {"ids": [np.asarray(x).tolist() for x in docs], "t": temperature, "p": top_p}
    slug = name.replace(" ", "_").replace("=", "").replace("/", "")
    path = cache_dir("power") / f"observed-{slug}-{fingerprint(spec)}.npz"
    if path.is_file():
        with np.load(path) as got:
            return [{k: got[f"{i}-{k}"] for k in ("es", "qtop", "qt")} for i in range(len(docs))]
    t0 = time.perf_counter()
    out = read(load_assist(str(resolve_model(None))), docs, temperature, top_p)
    np.savez(path, **{f"{i}-{k}": v for i, r in enumerate(out) for k, v in r.items()})
    tokens = sum(np.asarray(x).size for x in docs)
    print(f"model read {name}: {tokens} tokens in {time.perf_counter() - t0:.0f} s", flush=True)
    return out
