"""The model's reading through ONNX Runtime: the same expected and observed scores as
``detector.reading.model.ModelAssist`` (the torch reading, the reference), on one CPU thread.

The causal LM is exported once into the data directory (``data_dir()/reading/``) as two ONNX
graphs, redone when the model's files or the export's recipe change (``stamp.json``):

- the body (``body.onnx``): token ids ``[batch, positions]`` to the final hidden states, no KV
  cache (one pass reads a window), no attention mask (windows are right-padded and every
  position reads only those before it, so padding never reaches a read position);
- the head (``head.onnx``), written here with ``onnx.helper``: the output embedding and only
  the reductions the scores need, per position: the tempered logits' ``TOP_K`` largest values
  and their ids, their log-sum-exp, ``sum p log p`` and ``sum p^2`` over the whole vocabulary
  and the logit of the token the text holds. Nothing of vocabulary size leaves the graph.

``E[s] - 1 = sum_x p_x g(p_x)`` with ``g(q) = psi(1 + 1/q) + gamma_E - 1`` is exact (float64)
over the top ``TOP_K`` tokens; below them ``q < 1 / TOP_K`` and ``psi(1 + z) = ln z + 1/(2z) -
1/(12 z^2) + O(z^-4)`` gives ``q g(q) = -q ln q + (gamma_E - 1) q + q^2 / 2 + O(q^3)``, summed
from the graph's whole-vocabulary sums less their top-``TOP_K`` part (error below ``1e-9``
per token). Under top-p the nucleus is cut from the top ``TOP_K`` exactly as the torch reading
cuts it; a position whose nucleus runs past them (rare) is read from its full logits by the
torch reading's own function.

``int8``: ``onnxruntime.quantization.quantize_dynamic`` of the body's linear layers (int8
weights per output channel, activations quantized per tensor at run time); the head stays
float32. How far each variant moves the scores, and what it costs:
docs/research.md ("The model's reading through ONNX Runtime").

onnxruntime (and, for the export, onnx and onnxscript) are imported here only, inside the
functions that need them: the library imports without them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import secrets
import shutil
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from detector.evidence.power import EULER_GAMMA
from detector.paths import data_dir
from detector.reading.model import TOP_K, ModelAssist, check_model_dir

VARIANTS = ("float32", "int8")
# Bump when the export changes what the graphs compute: a stamp of another recipe re-exports.
RECIPE = 2
MIN_POSITIONS = 2  # the exported body's shortest input (torch.export specializes 0 and 1)


class OrtUnavailable(RuntimeError):
    """onnxruntime (or, to export, onnx/onnxscript) is not installed."""


def _ort() -> Any:
    try:
        import onnxruntime
    except ImportError:
        raise OrtUnavailable(
            "the ONNX Runtime reading needs onnxruntime (pip install onnxruntime)"
        ) from None
    return onnxruntime


def model_fingerprint(model_dir: Path) -> str:
    """A digest of what the export reads: ``config.json``'s bytes and each weight file's
    name, size and modification time (a changed or replaced model changes it)."""
    h = hashlib.sha256((model_dir / "config.json").read_bytes())
    for p in sorted(model_dir.iterdir()):
        if p.suffix in (".safetensors", ".bin") or p.name.endswith(".index.json"):
            st = p.stat()
            h.update(f"{p.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


def export_dir(model_dir: Path) -> Path:
    """Where ``model_dir``'s graphs live: ``data_dir()/reading/<name>-<path digest>``."""
    tag = hashlib.sha256(str(model_dir.resolve()).encode()).hexdigest()[:12]
    return data_dir() / "reading" / f"{model_dir.name}-{tag}"


def _stamp(model_dir: Path, variant: str) -> dict[str, Any]:
    import onnxruntime

    return {
        "recipe": RECIPE,
        "variant": variant,
        "model": model_fingerprint(model_dir),
        "top_k": TOP_K,
        "onnxruntime": onnxruntime.__version__,
    }


def ensure_exported(model_dir: Path, variant: str = "float32") -> Path:
    """The directory holding ``model_dir``'s ``body.onnx`` and ``head.onnx`` in ``variant``,
    exported (and quantized) now unless its stamp matches the model and the recipe. Written
    beside the target and renamed into place, so a reader never sees half a graph."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}")
    _ort()
    model_dir = check_model_dir(model_dir)
    target = export_dir(model_dir) / variant
    want = _stamp(model_dir, variant)
    stamp = target / "stamp.json"
    if stamp.is_file() and json.loads(stamp.read_text()) == want:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f"{variant}.{secrets.token_hex(6)}"
    tmp.mkdir()
    try:
        _export(model_dir, tmp, variant)
        (tmp / "stamp.json").write_text(json.dumps(want, indent=2) + "\n")
        old = target.parent / f"{variant}.old.{secrets.token_hex(6)}"
        if target.exists():
            target.rename(old)
        tmp.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _export(model_dir: Path, out: Path, variant: str) -> None:
    """Write ``body.onnx`` (torch.onnx's dynamo exporter; then int8 for ``int8``) and
    ``head.onnx`` into ``out``."""
    import torch
    from transformers import AutoModelForCausalLM

    try:
        import onnx  # noqa: F401
        import onnxscript  # noqa: F401
    except ImportError:
        raise OrtUnavailable("exporting the reading needs onnx and onnxscript") from None
    model: Any = AutoModelForCausalLM.from_pretrained(
        str(model_dir), dtype=torch.float32, local_files_only=True
    ).eval()

    class Body(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lm = model

        def forward(self, input_ids: Any) -> Any:
            return self.lm.base_model(input_ids=input_ids, use_cache=False).last_hidden_state

    body = Body().eval()
    example = torch.zeros((2, 8), dtype=torch.long)
    batch = torch.export.Dim("batch", min=1, max=4096)
    positions = torch.export.Dim("positions", min=MIN_POSITIONS, max=1 << 16)
    plain = out / ("body.float32.onnx" if variant != "float32" else "body.onnx")
    with torch.inference_mode():
        torch.onnx.export(
            body,
            (example,),
            str(plain),
            input_names=["input_ids"],
            output_names=["hidden"],
            dynamic_shapes={"input_ids": {0: batch, 1: positions}},
            dynamo=True,
            external_data=True,
            optimize=True,
        )
    if variant == "int8":
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantize_dynamic(
            str(plain),
            str(out / "body.onnx"),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            extra_options={"MatMulConstBOnly": True},
        )
        for p in out.glob("body.float32.onnx*"):
            p.unlink()
    head = model.get_output_embeddings().weight.detach().numpy().astype(np.float32)
    _write_head(head, out / "head.onnx")


def _write_head(weight: NDArray[np.float32], path: Path) -> None:
    """The head graph: ``hidden [rows, H]``, ``targets [rows]``, ``inv_temperature [1]`` to
    ``top_values``/``top_ids [rows, TOP_K]`` (tempered logits), ``lse``, ``sum_plogp``,
    ``sum_p2`` and ``target_logit`` ``[rows]``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    vocab, hidden = weight.shape
    k = min(TOP_K, vocab)
    f32 = TensorProto.FLOAT
    nodes = [
        helper.make_node("MatMul", ["hidden", "weight_t"], ["raw"]),
        helper.make_node("Mul", ["raw", "inv_temperature"], ["z"]),
        helper.make_node("TopK", ["z", "k"], ["top_values", "top_ids"], axis=-1),
        helper.make_node("ReduceLogSumExp", ["z", "last"], ["lse_k"], keepdims=1),
        helper.make_node("Sub", ["z", "lse_k"], ["logp"]),
        helper.make_node("Exp", ["logp"], ["p"]),
        helper.make_node("Mul", ["p", "logp"], ["plogp"]),
        helper.make_node("ReduceSum", ["plogp", "last"], ["sum_plogp"], keepdims=0),
        helper.make_node("Mul", ["p", "p"], ["p2"]),
        helper.make_node("ReduceSum", ["p2", "last"], ["sum_p2"], keepdims=0),
        helper.make_node("Squeeze", ["lse_k", "last"], ["lse"]),
        helper.make_node("Unsqueeze", ["targets", "last"], ["targets_k"]),
        helper.make_node("GatherElements", ["z", "targets_k"], ["target_k"], axis=1),
        helper.make_node("Squeeze", ["target_k", "last"], ["target_logit"]),
    ]
    graph = helper.make_graph(
        nodes,
        "reading_head",
        [
            helper.make_tensor_value_info("hidden", f32, ["rows", hidden]),
            helper.make_tensor_value_info("targets", TensorProto.INT64, ["rows"]),
            helper.make_tensor_value_info("inv_temperature", f32, [1]),
        ],
        [
            helper.make_tensor_value_info("top_values", f32, ["rows", k]),
            helper.make_tensor_value_info("top_ids", TensorProto.INT64, ["rows", k]),
            helper.make_tensor_value_info("lse", f32, ["rows"]),
            helper.make_tensor_value_info("sum_plogp", f32, ["rows"]),
            helper.make_tensor_value_info("sum_p2", f32, ["rows"]),
            helper.make_tensor_value_info("target_logit", f32, ["rows"]),
        ],
        [
            numpy_helper.from_array(np.ascontiguousarray(weight.T), "weight_t"),
            numpy_helper.from_array(np.array([k], np.int64), "k"),
            numpy_helper.from_array(np.array([-1], np.int64), "last"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    helper.set_model_props(model, {"vocab_size": str(vocab)})  # the head's rows, read back
    onnx.save_model(model, str(path), save_as_external_data=True, location=path.name + ".data")


def _digamma(x: NDArray[np.float64]) -> NDArray[np.float64]:
    from scipy.special import digamma

    return np.asarray(digamma(x), np.float64)


def excess_from_top(
    top_values: NDArray[np.float32],
    lse: NDArray[np.float32],
    sum_plogp: NDArray[np.float32],
    sum_p2: NDArray[np.float32],
) -> NDArray[np.float64]:
    """``E[s] - 1`` over the whole vocabulary (top-p 1) from the head's outputs: exact over
    the top values, the series ``-q ln q + (gamma_E - 1) q + q^2 / 2`` below them."""
    logp = top_values.astype(np.float64) - lse.astype(np.float64)[:, None]
    p = np.exp(logp)
    top = (p * (_digamma(1.0 + 1.0 / p) + (EULER_GAMMA - 1.0))).sum(-1)
    tail_p = np.clip(1.0 - p.sum(-1), 0.0, None)
    tail_plogp = np.minimum(sum_plogp.astype(np.float64) - (p * logp).sum(-1), 0.0)
    tail_p2 = np.clip(sum_p2.astype(np.float64) - (p * p).sum(-1), 0.0, None)
    tail = -tail_plogp + (EULER_GAMMA - 1.0) * tail_p + 0.5 * tail_p2
    return np.clip(top + np.clip(tail, 0.0, None), 0.0, None)


def observed_scores(q: NDArray[np.float64]) -> NDArray[np.float64]:
    """``f(q) = psi(1 + 1/q) + gamma_E`` (``model.observed_score_of`` in numpy), >= 1."""
    return np.clip(_digamma(1.0 + 1.0 / np.maximum(q, 1e-300)) + EULER_GAMMA, 1.0, None)


class OrtAssist(ModelAssist):
    """``ModelAssist``'s reading with the forward pass in ONNX Runtime (one intra-op thread
    by default), ``variant`` "float32" or "int8". The torch model is never loaded; the
    windows, batching, prefix and scores are the torch reading's."""

    def __init__(
        self,
        model_dir: str | os.PathLike[str],
        *,
        variant: str = "float32",
        threads: int = 1,
        window: int = 512,
        context: int = 128,
        batch_tokens: int = 4096,
        head_rows: int = 256,
        prefix: str = "bos",
    ) -> None:
        from transformers import AutoConfig

        ort = _ort()
        self.path = check_model_dir(model_dir)
        self.device = "cpu"
        self.variant = variant
        graphs = ensure_exported(self.path, variant)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        providers = ["CPUExecutionProvider"]
        self.body = ort.InferenceSession(str(graphs / "body.onnx"), options, providers=providers)
        self.head = ort.InferenceSession(str(graphs / "head.onnx"), options, providers=providers)
        self.config: Any = AutoConfig.from_pretrained(str(self.path), local_files_only=True)
        self._setup(window, context, batch_tokens, head_rows, prefix)

    def __repr__(self) -> str:
        return f"<OrtAssist {self.path.name} {self.variant}>"

    def _model_vocab(self) -> int:
        """The output embedding's rows (the torch reading's bound on ids), from the head."""
        return int(self.head.get_modelmeta().custom_metadata_map["vocab_size"])

    def _hidden_rows(self, batch: list[tuple[int, int, int, list[int]]]) -> Any:
        longest = max(MIN_POSITIONS, max(len(w[3]) for w in batch))
        inputs = np.zeros((len(batch), longest), dtype=np.int64)  # right padding
        for i, (_, _, _, seq) in enumerate(batch):
            inputs[i, : len(seq)] = seq
        (hidden,) = self.body.run(["hidden"], {"input_ids": inputs})
        return np.concatenate(
            [hidden[i, len(seq) - (b - a) : len(seq)] for i, (_, a, b, seq) in enumerate(batch)]
        )

    def _excess(
        self, hidden: Any, targets: Any, temperature: float, top_p: float
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        parts, observed = [], []
        targets = np.asarray(targets, np.int64)
        inv_t = np.array([1.0 / temperature], np.float32)
        for i in range(0, hidden.shape[0], self.head_rows):
            rows = np.ascontiguousarray(hidden[i : i + self.head_rows], np.float32)
            t = targets[i : i + self.head_rows]
            vals, ids, lse, plogp, p2, z_t = self.head.run(
                None, {"hidden": rows, "targets": t, "inv_temperature": inv_t}
            )
            excess, q = self._scores(rows, t, vals, ids, lse, plogp, p2, z_t, temperature, top_p)
            parts.append(excess)
            observed.append(observed_scores(q))
        if not parts:
            return np.zeros(0), np.zeros(0)
        return np.concatenate(parts), np.concatenate(observed)

    def _scores(
        self,
        rows: NDArray[np.float32],
        targets: NDArray[np.int64],
        vals: NDArray[np.float32],
        ids: NDArray[np.int64],
        lse: NDArray[np.float32],
        plogp: NDArray[np.float32],
        p2: NDArray[np.float32],
        z_t: NDArray[np.float32],
        temperature: float,
        top_p: float,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(E[s] - 1, q_x)`` of one block of rows, as ``model._excess_rows`` defines them."""
        q_t = np.exp(z_t.astype(np.float64) - lse.astype(np.float64))
        if top_p >= 1.0:
            return excess_from_top(vals, lse, plogp, p2), q_t
        p = np.exp(vals.astype(np.float64) - lse.astype(np.float64)[:, None])
        keep = (np.cumsum(p, axis=-1) - p) < top_p
        keep[:, 0] = True
        kept = np.where(keep, p, 0.0)
        kept /= kept.sum(-1, keepdims=True)
        safe = np.where(kept > 0, kept, 1.0)
        f = _digamma(1.0 + 1.0 / safe) + (EULER_GAMMA - 1.0)
        excess = np.clip(np.where(kept > 0, kept * f, 0.0).sum(-1), 0.0, None)
        q_top = (kept * (ids == targets[:, None])).sum(-1)
        long = keep[:, -1]  # the nucleus may run past the top TOP_K: read those rows in full
        if long.any():
            e_long, q_long = self._full_rows(rows[long], targets[long], temperature, top_p)
            excess[long] = e_long
            q_top[long] = q_long
            q_t[long] = q_long
        return excess, np.where(q_top > 0, q_top, q_t)

    def _full_rows(
        self,
        rows: NDArray[np.float32],
        targets: NDArray[np.int64],
        temperature: float,
        top_p: float,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The torch reading's ``_excess_rows`` on these rows' full logits (float32 head)."""
        import torch

        from detector.reading.model import _excess_rows

        logits = torch.from_numpy(rows @ self._head_weight().T).to(torch.float64)
        excess, q = _excess_rows(logits / temperature, torch.from_numpy(targets), top_p)
        return excess.numpy(), q.numpy()

    @functools.cache  # noqa: B019 (one per process: load_ort_assist caches the instance)
    def _head_weight(self) -> NDArray[np.float32]:
        import onnx
        from onnx import numpy_helper

        graphs = export_dir(self.path) / self.variant
        model = onnx.load(str(graphs / "head.onnx"))
        (init,) = [t for t in model.graph.initializer if t.name == "weight_t"]
        return np.ascontiguousarray(numpy_helper.to_array(init).T)


@functools.lru_cache(maxsize=4)
def load_ort_assist(model_dir: str, variant: str = "float32") -> OrtAssist:
    """One ``OrtAssist`` per model directory, variant and process."""
    return OrtAssist(model_dir, variant=variant)
