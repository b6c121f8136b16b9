"""Model-assisted detection: a causal LM reads the text once and weights each token's score.

A token that was (nearly) the only choice carries no watermark signal, yet the Gamma sum test
scores it like any other. Here each position gets the expected score of a token sampled by
the keyed Gumbel-max draw from the model's distribution ``q`` at that position,

    E[s] = sum_x q_x (psi(1 + 1/q_x) + gamma_E)      (1 when one token has all the mass),

and, given the text, the expected score of the token it holds: under the watermark the
chosen token x, of sampling probability ``q_x``, has ``u ~ (1/q_x) u^(1/q_x - 1)``, so

    E[s | x] = f(q_x) = psi(1 + 1/q_x) + gamma_E      (the "observed" score).

The statistic is ``S_w = sum_t w_t s_t`` over the scored tokens with the observed-token
weights ``w_t = min(f(q_x) - 1, OBSERVED_WEIGHT_CAP)`` when the observed scores are given
(``ModelAssist.read``), else ``w_t = E[s_t] - 1``. The model reads the text without its
prompt, so where it is confident and the text took another token, ``E[s] - 1`` is near 0
although the position carries signal; the observed weight keeps it. The cap keeps the
positions the prompt-free model finds surprising (often because it lacks the prompt) from
dominating the sum. On the real generator's code answers at T=0.7/top-p 0.9 the capped
observed weights were chosen on half of the texts and beat ``E[s] - 1`` on the other half
(docs/benchmarks.md, "Model-assisted weighted test"). Either way the weights depend on the
text only, never on the key, so under the null the scores stay i.i.d. Exp(1) and the exact
tail of ``S_w`` (``detector.evidence.weighted``) is its p-value.

Edited text: a token substituted by a person is usually one the model finds unlikely where it
stands, and it breaks the keyed contexts of the ``w`` tokens after it, whose scores are then
pure noise. The observed-token weighting drops such suspected edits: a token the model reads
below ``SUSPECT_PROBABILITY`` and the ``w`` tokens after it weigh 0 (``suspected_edits``).
Which tokens are dropped depends on the text only, so the null is unchanged; at 20% random
substitutions of creative answers the weighted test detects far more often, on clean code
about as often (docs/benchmarks.md, "Suspected edits").

``ModelAssist`` loads a Hugging Face causal LM from a local directory (transformers, local
files only) and returns the per-token ``E[s]`` of many texts in batched forward passes:
``read`` returns both ``E[s]`` and the observed score ``f(q_x)`` of every token;
texts are cut into windows of at most ``window`` positions, each after the first re-reading
``context`` tokens before it, so memory stays bounded and long texts fit the model's length.
``q`` is the model's distribution after the key's temperature and top-p where they are known
(vLLM's top-p semantics), else at temperature 1.

The decision with a model's reading is the product's one decision
(``detector.decision.decide``, ``detect_text(..., assist=...)``): the weighted test joins the
localized Gamma test, Bonferroni over the two.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from detector.core.contexts import as_token_array
from detector.core.sampling import top_k_top_p_mask
from detector.evidence.power import EULER_GAMMA

WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
TOP_K = 1024  # top-p nuclei are taken from the top TOP_K logits when they fit there


@dataclass(frozen=True)
class ModelReading:
    """What a model read of one text: per token, ``expected`` (``E[s]`` of a token sampled
    from the model's distribution there) and ``observed`` (``f(q_x)``, the expected score of
    the token the text holds, given that it was chosen; 1 where the model made no
    prediction). Both float64, >= 1, one per token."""

    expected: NDArray[np.float64]
    observed: NDArray[np.float64]


class ModelDirError(ValueError):
    """A directory that cannot serve as a tokenizer's assisting model; the message says why."""


def expected_score_of(probs: Any) -> Any:
    """``E[s] - 1 = sum_x q_x (psi(1 + 1/q_x) + gamma_E - 1)`` per row of ``probs``
    (``[rows, vocab]`` torch tensor summing to 1 per row); entries with ``q = 0`` add 0.
    The ``- 1`` sits inside the sum so that a certain token gives exactly 0, not a rounding
    residue of ``E[s] - 1``."""
    import torch

    inv = torch.where(probs > 0, probs.reciprocal(), torch.ones_like(probs))
    f = torch.special.digamma(inv + 1.0) + (EULER_GAMMA - 1.0)
    return torch.where(probs > 0, probs * f, torch.zeros_like(probs)).sum(-1).clamp_min(0.0)


def observed_score_of(q: Any) -> Any:
    """``f(q) = psi(1 + 1/q) + gamma_E`` elementwise (torch), the expected score of a token of
    sampling probability ``q`` given that the keyed draw chose it; 1 at ``q = 1``."""
    import torch

    f = torch.special.digamma(1.0 + q.clamp_min(1e-300).reciprocal()) + EULER_GAMMA
    return f.clamp_min(1.0)  # f >= 1 on (0, 1]; rounding at q = 1 may dip below by an ulp


def _device() -> str:
    from detector.core.scoring import cuda_available

    return "cuda" if cuda_available() else "cpu"


def check_model_dir(path: str | os.PathLike[str], vocab_size: int | None = None) -> Path:
    """The resolved model directory, or ``ModelDirError`` saying what is wrong: not a
    directory, no ``config.json``, no weights, not a causal LM, or a vocabulary smaller
    than the tokenizer's ``vocab_size`` (a model may pad its vocabulary, never lack ids)."""
    p = Path(path).expanduser()
    if not p.is_dir():
        raise ModelDirError(f"{p} is not a directory")
    if not (p / "config.json").is_file():
        raise ModelDirError(f"{p} has no config.json (not a Hugging Face model directory)")
    if not any((p / name).is_file() for name in WEIGHT_FILES):
        raise ModelDirError(f"{p} has no weights ({', '.join(WEIGHT_FILES)})")
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(str(p), local_files_only=True)
    except (OSError, ValueError, KeyError) as exc:
        raise ModelDirError(f"{p}/config.json cannot be read: {exc}") from None
    model_vocab = getattr(config, "vocab_size", None)
    if model_vocab is None:
        model_vocab = getattr(getattr(config, "text_config", None), "vocab_size", None)
    if not isinstance(model_vocab, int):
        raise ModelDirError(f"{p}/config.json names no vocab_size")
    if vocab_size is not None and model_vocab < vocab_size:
        raise ModelDirError(
            f"the model's vocabulary ({model_vocab} ids) is smaller than the tokenizer's "
            f"({vocab_size} ids): it is not this tokenizer's model"
        )
    return p.resolve()


class ModelAssist:
    """A causal LM that gives each token of a text its expected watermark score ``E[s]``.

    Not thread-safe (one forward pass at a time); cache one per process with ``load_assist``.
    """

    def __init__(
        self,
        model_dir: str | os.PathLike[str],
        *,
        device: str | None = None,
        window: int = 512,
        context: int = 128,
        batch_tokens: int = 4096,
        head_rows: int = 256,
        prefix: str = "bos",
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        self.path = check_model_dir(model_dir)
        self.device = device or _device()
        model: Any = AutoModelForCausalLM.from_pretrained(
            str(self.path), dtype=torch.float32, local_files_only=True
        )
        self.model: Any = model.to(self.device).eval()
        self.config: Any = self.model.config
        self._setup(window, context, batch_tokens, head_rows, prefix)

    def _setup(
        self, window: int, context: int, batch_tokens: int, head_rows: int, prefix: str
    ) -> None:
        """The reading's shape from ``self.config``: windows within the model's length, the
        vocabulary the ids must lie in, the prefix."""
        cfg = self.config
        max_len = int(getattr(cfg, "max_position_embeddings", window) or window)
        self.window = min(window, max_len)
        self.context = min(context, self.window // 2)
        self.batch_tokens = max(batch_tokens, self.window)
        self.head_rows = head_rows
        self.vocab_size = self._model_vocab()
        self.prefix = self._prefix(prefix)

    def _model_vocab(self) -> int:
        return int(self.model.get_output_embeddings().weight.shape[0])

    def __repr__(self) -> str:
        return f"<ModelAssist {self.path.name} on {self.device}>"

    def _prefix(self, kind: str) -> list[int]:
        """Token ids read before every text. ``bos``: the model's BOS token (none if it has
        none: the first token then has no prediction and gets E[s] = 1, weight 0). ``chat``:
        the chat template's assistant turn after an empty user message, the context of a
        chat answer whose prompt is unknown. Either way a function of the text only."""
        if kind == "chat":
            from transformers import AutoTokenizer

            tok = AutoTokenizer.from_pretrained(str(self.path), local_files_only=True)
            ids: Any = tok.apply_chat_template(
                [{"role": "user", "content": ""}],
                add_generation_prompt=True,
                tokenize=True,
                return_dict=False,
            )
            return [int(i) for i in ids]
        if kind != "bos":
            raise ValueError("prefix must be 'bos' or 'chat'")
        bos = getattr(self.config, "bos_token_id", None)
        return [int(bos)] if isinstance(bos, int) else []

    def weights(
        self, docs: Sequence[ArrayLike], *, temperature: float = 1.0, top_p: float = 1.0
    ) -> list[NDArray[np.float64]]:
        """``w_t = E[s_t] - 1`` of every token of every document (``expected_scores - 1``)."""
        return [e - 1.0 for e in self.expected_scores(docs, temperature=temperature, top_p=top_p)]

    def expected_scores(
        self, docs: Sequence[ArrayLike], *, temperature: float = 1.0, top_p: float = 1.0
    ) -> list[NDArray[np.float64]]:
        """``E[s]`` of every token of every document (token ids of this model's tokenizer,
        no special tokens): ``out[d][t]`` for token t of document d, float64, >= 1."""
        return [r.expected for r in self.read(docs, temperature=temperature, top_p=top_p)]

    def read(
        self, docs: Sequence[ArrayLike], *, temperature: float = 1.0, top_p: float = 1.0
    ) -> list[ModelReading]:
        """``E[s]`` and the observed score ``f(q_x)`` of every token of every document, in
        one batched reading. ``q_x`` is the text's token's probability after temperature and
        top-p; where top-p drops it, its probability at the temperature alone."""
        if not temperature > 0:
            raise ValueError("temperature must be positive (greedy text carries no watermark)")
        if not 0 < top_p <= 1:
            raise ValueError("top_p must lie in (0, 1]")
        arrays = [as_token_array(d) for d in docs]
        for ids in arrays:
            if ids.size and (ids.min() < 0 or ids.max() >= self.vocab_size):
                raise ValueError(f"token ids must lie in [0, {self.vocab_size})")
        out = [np.ones(ids.shape[0], np.float64) for ids in arrays]
        seen = [np.ones(ids.shape[0], np.float64) for ids in arrays]
        windows = [w for d, ids in enumerate(arrays) for w in self._windows(d, ids)]
        windows.sort(key=lambda w: len(w[3]))  # similar lengths batch with little padding
        batch: list[tuple[int, int, int, list[int]]] = []
        for w in windows:
            if batch and (len(batch) + 1) * len(w[3]) > self.batch_tokens:
                self._run(batch, arrays, out, seen, temperature, top_p)
                batch = []
            batch.append(w)
        if batch:
            self._run(batch, arrays, out, seen, temperature, top_p)
        return [ModelReading(e, o) for e, o in zip(out, seen, strict=True)]

    def _windows(self, d: int, ids: NDArray[np.int64]) -> list[tuple[int, int, int, list[int]]]:
        """``(document, first target, end target, input ids)`` per window. Target token j sits
        at sequence index ``len(prefix) + j`` and is predicted by the input one before it, so
        the inputs of targets ``[a, b)`` end at sequence index ``len(prefix) + b - 2`` and the
        last ``b - a`` inputs predict them; the inputs start ``context`` tokens earlier."""
        seq = self.prefix + ids.tolist()
        p = len(self.prefix)
        first = 0 if p else 1  # without a prefix, token 0 has no prediction
        found = []
        a = first
        while a < ids.shape[0]:
            lead = 0 if a == first else self.context
            b = min(ids.shape[0], a + self.window - lead)
            lo = max(0, p + a - 1 - lead)
            found.append((d, a, b, seq[lo : p + b - 1]))
            a = b
        return found

    def _run(
        self,
        batch: list[tuple[int, int, int, list[int]]],
        arrays: list[NDArray[np.int64]],
        out: list[NDArray[np.float64]],
        seen: list[NDArray[np.float64]],
        temperature: float,
        top_p: float,
    ) -> None:
        rows = self._hidden_rows(batch)
        targets = np.concatenate([arrays[d][a:b] for d, a, b, _ in batch])
        excess, observed = self._excess(rows, targets, temperature, top_p)
        k = 0
        for d, a, b, _ in batch:
            out[d][a:b] = 1.0 + excess[k : k + b - a]
            seen[d][a:b] = observed[k : k + b - a]
            k += b - a

    def _hidden_rows(self, batch: list[tuple[int, int, int, list[int]]]) -> Any:
        """The final hidden states ``[rows, hidden]`` of the batch's read positions, window
        by window in order (each window's last ``b - a`` inputs)."""
        import torch

        longest = max(len(w[3]) for w in batch)
        inputs = torch.zeros((len(batch), longest), dtype=torch.long)
        mask = torch.zeros((len(batch), longest), dtype=torch.long)
        for i, (_, _, _, seq) in enumerate(batch):  # right padding: causal rows ignore it
            inputs[i, : len(seq)] = torch.tensor(seq)
            mask[i, : len(seq)] = 1
        with torch.inference_mode():
            hidden = self.model.base_model(
                input_ids=inputs.to(self.device), attention_mask=mask.to(self.device)
            ).last_hidden_state  # [batch, longest, hidden]
            rows = [
                hidden[i, len(seq) - (b - a) : len(seq)] for i, (_, a, b, seq) in enumerate(batch)
            ]
            return torch.cat(rows)

    def _excess(
        self, hidden: Any, targets: Any, temperature: float, top_p: float
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(E[s] - 1, f(q_x))`` per row of final hidden states ``[rows, hidden]`` whose
        next tokens are ``targets``, ``head_rows`` rows of logits at a time (a
        [256, 49152] float64 block is 100 MB)."""
        import torch

        head = self.model.get_output_embeddings()
        targets = torch.as_tensor(targets)
        parts, observed = [], []
        with torch.inference_mode():
            for i in range(0, hidden.shape[0], self.head_rows):
                logits = head(hidden[i : i + self.head_rows]).to(torch.float64)  # [rows, vocab]
                t = targets[i : i + self.head_rows]
                excess, q = _excess_rows(logits / temperature, t, top_p)
                parts.append(excess.cpu().numpy())
                observed.append(observed_score_of(q).cpu().numpy())
        if not parts:
            return np.zeros(0), np.zeros(0)
        return np.concatenate(parts), np.concatenate(observed)


def _excess_rows(logits: Any, targets: Any, top_p: float) -> tuple[Any, Any]:
    """``(E[s] - 1, q_x)`` per row of tempered logits: ``q`` after top-p, and ``q_x`` the
    target's probability under it, or at the temperature alone where top-p drops it. The
    nucleus is taken from the ``TOP_K`` largest logits when it ends there (vLLM's top-p: a
    token stays when the mass strictly above it is below ``top_p``), else from the full sort."""
    import torch

    logp = logits.log_softmax(dim=-1)
    q_t = logp.gather(1, targets[:, None].to(logp.device))[:, 0].exp()
    if top_p >= 1.0:
        return expected_score_of(logp.exp()), q_t
    vals, idx = logp.topk(min(TOP_K, logp.shape[1]), dim=-1)  # descending
    p = vals.exp()
    keep = (p.cumsum(dim=-1) - p) < top_p
    keep[:, 0] = True
    excess = torch.empty(logp.shape[0], dtype=logp.dtype, device=logp.device)
    q_top = torch.zeros_like(excess)
    long = keep[:, -1]  # the nucleus may run past the top TOP_K
    short = ~long
    if bool(short.any()):
        kept = torch.where(keep[short], p[short], torch.zeros_like(p[short]))
        kept = kept / kept.sum(dim=-1, keepdim=True)
        excess[short] = expected_score_of(kept)
        hit = idx[short] == targets[short][:, None].to(idx.device)
        q_top[short] = (kept * hit).sum(dim=-1)
    if bool(long.any()):
        full = top_k_top_p_mask(logits[long], None, top_p).softmax(dim=-1)
        excess[long] = expected_score_of(full)
        q_top[long] = full.gather(1, targets[long][:, None].to(full.device))[:, 0]
    return excess, torch.where(q_top > 0, q_top, q_t)


EARLY_EXIT_FLOOR = 1e-3  # above the weighted test's SUSPECT_PROBABILITY (no suspected edits)


class EarlyExitAssist(ModelAssist):
    """``ModelAssist``'s reading from the first ``layers`` decoder layers: their hidden
    state goes through the model's final norm and its head, the rest of the body is never
    run. Its ``q`` is not the model's, but it is a function of the text alone, so the
    weighted test stays exact under the null; what it buys in power and costs in CPU is
    measured beside the full reading (``benchmarks/bench_readings.py``)."""

    def __init__(self, model_dir: str | os.PathLike[str], *, layers: int, **kwargs: Any) -> None:
        import torch

        super().__init__(model_dir, **kwargs)
        total = len(self.model.model.layers)
        if not 1 <= layers <= total:
            raise ValueError(f"layers must lie in [1, {total}]")
        self.layers = layers
        self.model.model.layers = torch.nn.ModuleList(list(self.model.model.layers)[:layers])
        self.model.config.num_hidden_layers = layers

    def __repr__(self) -> str:
        return f"<EarlyExitAssist {self.path.name} {self.layers} layers on {self.device}>"

    def read(
        self, docs: Sequence[ArrayLike], *, temperature: float = 1.0, top_p: float = 1.0
    ) -> list[ModelReading]:
        """``ModelAssist.read`` from the first layers, the observed score capped at
        ``f(EARLY_EXIT_FLOOR)``: an intermediate state read through the final head finds
        most tokens far less likely than the model does (on SmolLM2-135M at 24 of 30 layers,
        six in ten of its code answers' tokens below the suspected-edit probability), so
        this reading suspects no edits and only lowers the weight of the tokens it finds
        likely."""
        cap = float(observed_score_of(_scalar(EARLY_EXIT_FLOOR)))
        return [
            ModelReading(r.expected, np.minimum(r.observed, cap))
            for r in super().read(docs, temperature=temperature, top_p=top_p)
        ]


def _scalar(x: float) -> Any:
    import torch

    return torch.tensor(x, dtype=torch.float64)


@functools.lru_cache(maxsize=4)
def load_assist(model_dir: str) -> ModelAssist:
    """One ``ModelAssist`` per model directory and process (workers load a model once)."""
    return ModelAssist(model_dir)
