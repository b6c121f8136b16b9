"""``python -m generator``: generate from scripts and audits, or serve an OpenAI-compatible API.

    python -m generator generate --backend transformers --keys keys.json --key team-a \\
        --prompt "Write a poem" --max-tokens 100 --json
    python -m generator serve --backend vllm --keys keys.json [--key DEFAULT] --port 8001

Keys come only from the key file (a path); the command line carries key names, never values.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from generator import config
from generator.auth import (
    CLIENTS_FILE_ENV,
    ENFORCE_ENV,
    ClientRegistry,
    ClientsFileError,
    issue_token,
)
from generator.config import KeyFileError, KeyStore
from generator.core import SamplingSettings, WatermarkRequestError
from generator.credentials import CredentialsConfigError, ReplyCredentials
from generator.floors import SamplingFloors
from generator.types import GenerationRequest

BACKENDS = ("transformers", "vllm")


def default_backend() -> str:
    """vLLM when installed: measured faster on SmolLM2 here (20 vs 15 tok/s at batch 1, 122 vs
    63 at batch 8; docs/benchmarks.md), though it starts in ~35 s against ~3 s for transformers."""
    return "vllm" if importlib.util.find_spec("vllm") is not None else "transformers"


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=BACKENDS, default=default_backend())
    p.add_argument("--keys", required=True, help="JSON key file: {NAME: {key, algorithm, ...}}")
    p.add_argument(
        "--model", default=None, help="local model directory (default: embedded SmolLM2)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m generator", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="complete one prompt and print it")
    _common(gen)
    gen.add_argument("--key", default=None, help="key name in the key file")
    gen.add_argument("--prompt", required=True)
    gen.add_argument("--chat", action="store_true", help="wrap the prompt in the chat template")
    gen.add_argument("--max-tokens", type=int, default=64)
    gen.add_argument("--temperature", type=float, default=1.0)
    gen.add_argument("--top-p", type=float, default=1.0)
    gen.add_argument("--top-k", type=int, default=0)
    gen.add_argument("--seed", type=int, default=None)
    gen.add_argument("--no-watermark", action="store_true")
    gen.add_argument(
        "--json", action="store_true", help="print text, token ids and provenance as JSON"
    )
    srv = sub.add_parser(
        "serve", help="OpenAI-compatible server (/v1/completions, /v1/chat/completions)"
    )
    _common(srv)
    srv.add_argument("--key", default=None, help="default key name for requests that name none")
    srv.add_argument("--host", default="127.0.0.1")
    srv.add_argument("--port", type=int, default=8001)
    srv.add_argument(
        "--clients",
        default=config.clients_file(),
        help="clients file: bearer-token digests -> allowed key names, opt-out (required)",
    )
    srv.add_argument(
        "--enforce",
        action="store_true",
        help="refuse opt-outs, keyless calls and settings under the sampling floors",
    )
    floors = SamplingFloors.from_env()
    srv.add_argument(
        "--min-top-k",
        type=int,
        default=floors.min_top_k,
        help="refuse top_k from 1 to this minus 1 where watermarking is enforced "
        f"(default {floors.min_top_k})",
    )
    srv.add_argument(
        "--min-temperature",
        type=float,
        default=floors.min_temperature,
        help=f"refuse a lower temperature (default {floors.min_temperature:g})",
    )
    srv.add_argument(
        "--min-top-p",
        type=float,
        default=floors.min_top_p,
        help=f"refuse a lower top_p (default {floors.min_top_p:g})",
    )
    srv.add_argument(
        "--max-min-p",
        type=float,
        default=floors.max_min_p,
        help=f"refuse a higher min_p (default {floors.max_min_p:g})",
    )
    srv.add_argument(
        "--no-auth", action="store_true", help="serve without tokens (a private test only)"
    )
    srv.add_argument(
        "--content-credentials",
        action="store_true",
        default=config.content_credentials(),
        help="sign every watermarked reply with a C2PA manifest (needs --c2pa-cert/--c2pa-key);"
        " without it, keys marked content_credentials and requests that ask are signed",
    )
    srv.add_argument(
        "--c2pa-cert",
        default=config.c2pa_cert(),
        help="the organization's C2PA signing certificate chain (PEM, signer first)",
    )
    srv.add_argument(
        "--c2pa-key", default=config.c2pa_key(), help="its private key (PEM, mode 0600)"
    )
    srv.add_argument(
        "--organization",
        default=config.c2pa_organization(),
        help="the organization the manifests name (default: the certificate's O=)",
    )
    tok = sub.add_parser("issue-token", help="add a client to a clients file; prints its token")
    tok.add_argument("--clients", required=True, help="the clients file (created if absent)")
    tok.add_argument("--name", required=True, help="the client's name (in the generation log)")
    tok.add_argument("--keys", default="", help="comma-separated key names it may use, or *")
    tok.add_argument("--opt-out", action="store_true", help="it may opt out of watermarking")
    return parser


def _auth(args: argparse.Namespace) -> ClientRegistry | None:
    if args.no_auth:
        return None
    if not args.clients:
        raise ClientsFileError(
            "the generator requires bearer tokens: pass --clients FILE (python -m generator "
            "issue-token makes one) or --no-auth for a private test"
        )
    return ClientRegistry.from_file(args.clients)


def _backend(args: argparse.Namespace, store: KeyStore) -> Any:
    if args.backend == "vllm":
        from generator.vllm_backend import VLLMBackend

        return VLLMBackend(args.keys, args.model, default_key=args.key)
    from generator.hf import TransformersBackend

    return TransformersBackend(store, args.model, default_key=args.key)


def _credentials_env(args: argparse.Namespace) -> dict[str, str]:
    values = {
        config.CONTENT_CREDENTIALS_ENV: "1" if args.content_credentials else "0",
        config.C2PA_CERT_ENV: str(Path(args.c2pa_cert).resolve()) if args.c2pa_cert else "",
        config.C2PA_KEY_ENV: str(Path(args.c2pa_key).resolve()) if args.c2pa_key else "",
        config.C2PA_ORGANIZATION_ENV: args.organization or "",
    }
    return values


def run_generate(args: argparse.Namespace) -> dict[str, Any]:
    store = KeyStore.from_file(args.keys)
    if args.key is not None and args.key not in store:
        raise WatermarkRequestError(f"unknown watermark key name {args.key!r}")
    sampling = SamplingSettings(temperature=args.temperature, top_p=args.top_p, top_k=args.top_k)
    messages = ({"role": "user", "content": args.prompt},) if args.chat else None
    req = GenerationRequest(
        prompt=args.prompt,
        messages=messages,
        max_tokens=args.max_tokens,
        sampling=sampling,
        key_name=args.key,
        watermark=not args.no_watermark,
        seed=args.seed,
    )
    backend = _backend(args, store)
    try:
        g = backend.generate([req])[0]
    finally:
        getattr(backend, "close", lambda: None)()
    return {
        "text": g.text,
        "token_ids": list(g.token_ids),
        "finish_reason": g.finish_reason,
        "backend": args.backend,
        **g.provenance(),
    }


def run_serve(args: argparse.Namespace) -> int:
    from detector.text.tokenizers import load_tokenizer
    from generator.models import resolve_model
    from generator.provenance_asgi import DEFAULT_KEY_ENV, MODEL_ENV, TOKENIZER_ENV

    store = KeyStore.from_file(args.keys)  # fail fast on a bad file, before a slow start
    if args.key is not None and args.key not in store:
        raise WatermarkRequestError(f"unknown watermark key name {args.key!r}")
    auth = _auth(args)
    credentials = ReplyCredentials.load(  # a bad certificate stops the server here
        args.c2pa_cert, args.c2pa_key, args.organization, args.content_credentials
    )
    os.environ.update(_credentials_env(args))  # vLLM's process reads them (the headers)
    floors = SamplingFloors(args.min_top_k, args.min_temperature, args.min_top_p, args.max_min_p)
    if args.backend == "vllm":
        from generator.vllm_backend import serve_vllm

        os.environ.update(floors.to_env())  # the gate and the headers in vLLM's process
        if auth is not None:  # vLLM builds our gate from the environment
            os.environ[CLIENTS_FILE_ENV] = str(Path(args.clients).resolve())
            os.environ[ENFORCE_ENV] = "1" if args.enforce else "0"
        return serve_vllm(
            args.keys, args.model, args.key, args.host, args.port, gate=auth is not None
        )
    import uvicorn

    from generator.provenance_asgi import ProvenanceHeaders  # noqa: F401  (headers set by the app)
    from generator.server import create_app

    path = resolve_model(args.model)
    os.environ.update({MODEL_ENV: path.name, TOKENIZER_ENV: load_tokenizer(str(path)).content_hash})
    if args.key:
        os.environ[DEFAULT_KEY_ENV] = args.key
    app = create_app(
        _backend(args, store),
        auth,
        enforce=args.enforce,
        default_key=args.key,
        floors=floors,
        credentials=credentials,
    )
    uvicorn.run(app, host=args.host, port=args.port, log_level="info")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "serve":
            return run_serve(args)
        if args.command == "issue-token":
            keys = [k.strip() for k in args.keys.split(",") if k.strip()]
            print(issue_token(args.clients, args.name, keys, args.opt_out))
            return 0
        result = run_generate(args)
    except (
        KeyFileError,
        ClientsFileError,
        CredentialsConfigError,
        WatermarkRequestError,
        FileNotFoundError,
        ValueError,
    ) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result))
    else:
        print(result["text"])
    return 0
