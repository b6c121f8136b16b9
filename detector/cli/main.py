"""``python -m detector detect --key K [--tokenizer PATH|default] [FILE|-]``: JSON.

``detect`` prints the product's decision (``detector.decision.decide``: the global Gamma test
and the span scan, corrected), the same as the web service gives, with the spans that carry
the watermark; the plain Gamma test, and the statistic vLLM's detector computes, under
``gamma``.

``python -m detector verify REPORT --jwks JWKS [--text FILE] [--key-file K --tokenizer T]
[--ngram-table FILE]``
checks a signed report (``detector.reports.signed``): exit 0 when it holds, 1 with the reason if
not.

Bad input (no text, undecodable bytes, unknown tokenizer, key out of range) prints one line on
stderr and exits with status 2; the key's value never appears in any output.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from detector.cli.errors import CliError
from detector.core.config import ALGORITHMS, DEFAULT_THRESHOLD, KeyConfig, parse_key

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse would print usage; keep it one line
        raise CliError(message)


def _key(value: str) -> int:
    try:
        return parse_key(value)
    except ValueError as exc:  # parse_key's messages never hold the value
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m detector", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    det = sub.add_parser("detect", help="test a text for the watermark")
    keys = det.add_mutually_exclusive_group(required=True)
    keys.add_argument("--key", type=_key, help="the 64-bit watermark key")
    keys.add_argument("--key-file", help="read the key from this file (keeps it out of `ps`)")
    det.add_argument(
        "--tokenizer",
        default="default",
        help="HF directory, .gguf, default, mistral-v3 or mistral-tekken",
    )
    det.add_argument("--algorithm", choices=ALGORITHMS, default="gumbel")
    det.add_argument("--alpha", type=float, default=0.1)
    det.add_argument("--context-width", type=int, default=4)
    det.add_argument("--no-dedup", action="store_true", help="score repeated contexts too")
    det.add_argument(
        "--all-pairs",
        action="store_true",
        help="score the pairs common in human text too (the tokenizer's n-gram table unused)",
    )
    det.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD)
    det.add_argument(
        "--tokens-needed",
        type=int,
        default=None,
        help="the key's measured scored tokens for 80%% power (the three-way verdict's basis)",
    )
    det.add_argument(
        "--model",
        default=None,
        help="the tokenizer's model (a Hugging Face directory): decide as the product does, "
        "reading the text only where the model-free decision leaves it undecided",
    )
    det.add_argument(
        "--reading",
        default=None,
        help="with --model: the reading (ort-f32, the default; torch-f32; ort-int8)",
    )
    det.add_argument("--tokens", action="store_true", help="add per-token rows")
    det.add_argument(
        "--spans",
        action="store_true",
        help="accepted for compatibility: the spans are always part of the decision",
    )
    det.add_argument("file", nargs="?", default="-", help="text file, or - for stdin")
    ver = sub.add_parser("verify", help="verify a signed report or a receipt (exit 0 valid, 1 not)")
    ver.add_argument("report", help="the report or receipt: a compact JWS, as the server sent it")
    ver.add_argument("--jwks", required=True, help="the server's /.well-known/jwks.json, saved")
    ver.add_argument("--text", help="the checked text: its SHA-256 must match")
    ver.add_argument("--key-file", help="the watermark key (with --tokenizer): recompute")
    ver.add_argument("--tokenizer", help="HF directory, .gguf, or default (with --key-file)")
    ver.add_argument("--hypothesis", type=int, default=None, help="index (default: the best)")
    ver.add_argument(
        "--ngram-table",
        help="the n-gram table .npz the report names, when this detector ships another one",
    )
    return parser


def _read_text(path: str) -> str:
    try:
        data = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CliError(f"the input is not valid UTF-8 (byte {exc.start})") from None
    if not text.strip():
        raise CliError("no text to check")
    return text


def _read_key(args: argparse.Namespace) -> int:
    if getattr(args, "key", None) is not None:
        return int(args.key)
    try:
        raw = open(args.key_file, encoding="utf-8").read().strip()
    except (OSError, UnicodeDecodeError):
        raise CliError(f"cannot read the key file {args.key_file}") from None
    try:
        return _key(raw)
    except argparse.ArgumentTypeError as exc:
        raise CliError(str(exc)) from None


def run_detect(args: argparse.Namespace) -> dict[str, Any]:
    from detector.decision.text import detect_text
    from detector.text.ngrams import applied_hash
    from detector.text.tokenizers import load_tokenizer

    if not 0.0 < args.threshold < 1.0:
        raise CliError("--threshold must lie in (0, 1)")
    if args.tokens_needed is not None and args.tokens_needed < 1:
        raise CliError("--tokens-needed must be a positive integer")
    try:
        config = KeyConfig(
            key=_read_key(args),
            algorithm=args.algorithm,
            context_width=args.context_width,
            alpha=args.alpha,
            deduplicate_contexts="none" if args.no_dedup else "single_turn",
            deduplicate_contexts_max_history=None,  # repeats searched over the whole text
        )
    except ValueError as exc:
        raise CliError(str(exc)) from None
    text = _read_text(args.file)
    tokenizer = load_tokenizer(args.tokenizer)
    if args.model is None:
        if args.reading is not None:
            raise CliError("--reading needs --model")
        result: Any = detect_text(
            text,
            tokenizer,
            [config],
            threshold=args.threshold,
            tokens_needed=[args.tokens_needed],
            common_ngrams=not args.all_pairs,
        )
        token_ids, offsets = result.token_ids, lambda: result.offsets
    else:
        result, token_ids, offsets = _decide_adaptive(args, text, tokenizer, config)
    det = result.hypotheses[0].detection
    out: dict[str, Any] = result.summary()
    for row, span in zip(out["spans"], result.spans, strict=True):
        row["text"] = text[span.start_char : span.end_char]
    table = None if args.all_pairs else tokenizer.ngram_table
    out.update(
        num_common_tokens=det.num_common_tokens,
        tokenizer=tokenizer.name,
        tokenizer_hash=tokenizer.content_hash,
        ngram_table=applied_hash(table, config.context_width),
        algorithm=config.algorithm,
        context_width=config.context_width,
        threshold=args.threshold,
    )
    if args.tokens:
        out["tokens"] = [
            {
                "index": i,
                "token_id": int(t),
                "text": text[s:e],
                "start": int(s),
                "end": int(e),
                "scored": bool(m),
                "score": float(sc),
            }
            for i, (t, (s, e), m, sc) in enumerate(
                zip(token_ids, offsets(), det.scored_mask, det.token_scores, strict=True)
            )
        ]
    return out


def _decide_adaptive(args: argparse.Namespace, text: str, tokenizer: Any, config: Any) -> Any:
    """The product's adaptive decision (``detector.decision.text.decide_texts``): the
    model-free stage, and the named reading of ``--model`` where it leaves the text
    undecided."""
    from detector.decision.text import TextGroup, decide_texts
    from detector.reading.choice import DEFAULT_READING, READINGS, ReadingUnavailable, load_reading
    from detector.text.tokenizers import offsets_of

    name = args.reading or DEFAULT_READING
    if name not in READINGS:
        raise CliError(f"--reading must be one of {', '.join(READINGS)}")

    def reader() -> Any:
        try:
            return load_reading(args.model, name)
        except (ReadingUnavailable, OSError, ValueError) as exc:
            raise CliError(f"the model cannot be read with: {exc}") from None

    group = TextGroup(
        tokenizer,
        [config],
        tokens_needed=[args.tokens_needed],
        reader=reader,
        common_ngrams=not args.all_pairs,
    )
    (outcome,) = decide_texts([text], [group], threshold=args.threshold, reading="read")
    return outcome.decision, outcome.token_ids[0], lambda: offsets_of(outcome.encodings[0])


def main(argv: Sequence[str] | None = None) -> int:
    from detector.text.tokenizers import TokenizerError

    try:
        args = build_parser().parse_args(argv)
        if args.command == "verify":
            from detector.cli.verify import run_verify

            return run_verify(args, _read_key)
        out = run_detect(args)
    except (CliError, TokenizerError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    json.dump(out, sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")
    return 0
