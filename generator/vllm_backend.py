"""The vLLM backend: a stock offline vLLM engine with our V1 logits processor.

Keys reach the engine's processes through ``$PROVENANCE_KEYS_FILE`` (a path, never a value).
Engine start on this CPU takes ~25 s: build one backend and reuse it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from generator.config import KEYS_FILE_ENV, KeyStore
from generator.core import resolve_settings
from generator.floors import SamplingFloors
from generator.types import Generation, GenerationRequest

PROCESSOR_FQCN = "generator.vllm_v1:WatermarkLogitsProcessor"


def engine_env(keys_file: str | os.PathLike[str] | None, default_key: str | None) -> None:
    """Point this process (and the engine processes it spawns) at the key file."""
    from generator.models import data_dir
    from generator.vllm_v1 import DEFAULT_KEY_ENV

    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB: plenty for SmolLM2 at 2k context
    os.environ.setdefault("VLLM_CACHE_ROOT", str(data_dir() / "vllm-cache"))
    # vLLM logs to stdout by default; the CLI's stdout carries the JSON result.
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if keys_file is not None:
        os.environ[KEYS_FILE_ENV] = str(Path(keys_file).resolve())
    if default_key is not None:
        os.environ[DEFAULT_KEY_ENV] = default_key


class VLLMBackend:
    """Generate with ``vllm.LLM``; our processor picks each request's key by name."""

    name = "vllm"

    def __init__(
        self,
        keys_file: str | os.PathLike[str] | None,
        model: str | None = None,
        default_key: str | None = None,
        max_model_len: int = 2048,
    ) -> None:
        from vllm import LLM

        from detector.text.tokenizers import load_tokenizer
        from generator.models import resolve_model
        from generator.vllm_v1 import WatermarkLogitsProcessor

        engine_env(keys_file, default_key)
        self.store = KeyStore.from_file(keys_file) if keys_file is not None else None
        self.default_key = default_key
        path = resolve_model(model)
        self.model_name = path.name
        self.tokenizer_hash = load_tokenizer(str(path)).content_hash
        self.llm = LLM(
            model=str(path),
            logits_processors=[WatermarkLogitsProcessor],
            max_model_len=max_model_len,
            dtype="float32",
            enforce_eager=True,
            seed=int.from_bytes(os.urandom(4), "little"),
        )
        self.tokenizer = self.llm.get_tokenizer()

    def close(self) -> None:
        """Stop the engine processes now (rather than at interpreter exit, when logging is gone)."""
        engine = getattr(getattr(self, "llm", None), "llm_engine", None)
        if engine is not None:
            engine.engine_core.shutdown()

    def _params(self, request: GenerationRequest):  # -> vllm.SamplingParams
        from vllm import SamplingParams

        s = request.sampling
        return SamplingParams(
            max_tokens=request.max_tokens,
            temperature=s.temperature,
            top_k=s.top_k,
            top_p=s.top_p,
            min_p=s.min_p,
            repetition_penalty=s.repetition_penalty,
            frequency_penalty=s.frequency_penalty,
            presence_penalty=s.presence_penalty,
            seed=request.seed,
            ignore_eos=request.ignore_eos,
            extra_args=request.extra_args(),
        )

    def _prompt(self, request: GenerationRequest) -> dict[str, list[int]]:
        if request.messages is not None:
            ids = self.tokenizer.apply_chat_template(
                list(request.messages), add_generation_prompt=True, tokenize=True, return_dict=False
            )
        else:
            ids = self.tokenizer.encode(request.prompt, add_special_tokens=False)
        return {"prompt_token_ids": [int(i) for i in ids]}

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        # Resolve here too: a bad name fails before the engine sees it, and we learn the key name.
        if self.store is not None:
            self.store = self.store.refreshed()
        names = [
            resolve_settings(r.extra_args(), r.sampling, self.store, self.default_key)
            for r in requests
        ]
        outs = self.llm.generate(
            [self._prompt(r) for r in requests],  # type: ignore[arg-type]
            [self._params(r) for r in requests],
            use_tqdm=False,
        )
        return [self._result(o, n, r) for o, n, r in zip(outs, names, requests, strict=True)]

    def _result(self, out, resolved, request: GenerationRequest) -> Generation:  # type: ignore[no-untyped-def]
        # The engine's processes keep what the draw did; the settings say whether it had a choice.
        name, settings = resolved
        marked = settings is not None and SamplingFloors().refusal(asdict(request.sampling)) is None
        completion = out.outputs[0]
        return Generation(
            text=completion.text,
            token_ids=tuple(completion.token_ids),
            prompt_token_ids=tuple(out.prompt_token_ids or ()),
            key_name=name if marked else None,
            watermarked=marked,
            model=self.model_name,
            tokenizer_hash=self.tokenizer_hash,
            finish_reason=completion.finish_reason or "length",
        )


def serve_vllm(
    keys_file: str,
    model: str | None,
    default_key: str | None,
    host: str,
    port: int,
    *,
    gate: bool = True,
) -> int:
    """Replace this process with vLLM's own OpenAI server, our processor and provenance headers
    (and, with ``gate``, ``generator.auth.AuthGate`` configured from the environment).

    Starlette makes the middleware added last the outermost: the gate comes after the headers
    in the list, so it runs first and the headers describe the request it rewrote."""
    import sys

    from detector.text.tokenizers import load_tokenizer
    from generator.models import resolve_model
    from generator.provenance_asgi import MODEL_ENV, TOKENIZER_ENV
    from generator.records import RECORD_DIR_ENV

    engine_env(keys_file, default_key)
    path = resolve_model(model)
    os.environ.update({MODEL_ENV: path.name, TOKENIZER_ENV: load_tokenizer(str(path)).content_hash})
    # Where the engine leaves each non-streaming reply's draw record for the headers
    # (generator.records): private to this server's user.
    os.environ.setdefault(RECORD_DIR_ENV, tempfile.mkdtemp(prefix="provenance-records-"))
    argv = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(path),
        "--served-model-name",
        path.name,
        "--host",
        host,
        "--port",
        str(port),
        "--dtype",
        "float32",
        "--max-model-len",
        "2048",
        "--enforce-eager",
        # vLLM's neutral defaults for what a request leaves unset, not the model's
        # generation_config: the sampling drawn is the sampling the gate and the headers read
        # (the gate also writes it out: generator.fields.SAMPLING_DEFAULTS).
        "--generation-config",
        "vllm",
        "--logits-processors",
        PROCESSOR_FQCN,
        "--middleware",
        "generator.provenance_asgi.ProvenanceHeaders",
        *(("--middleware", "generator.auth.AuthGate") if gate else ()),
    ]
    os.execv(sys.executable, argv)
    return 0  # not reached
