"""``python -m detector verify``: check a signed report offline (exit 0 valid, 1 not)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from lzma import LZMAError
from typing import Any

from detector.reports.receipt import is_receipt, verify_receipt
from detector.reports.signed import ReportError, check_text, recompute, verify
from detector.text.ngrams import NgramTable

EXIT_OK, EXIT_FAILED = 0, 1


def _read(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise ReportError(f"cannot read the {what} {path}: {exc.strerror}") from None


def _text(path: str) -> str:
    try:
        return _read(path, "text").decode("utf-8")
    except UnicodeDecodeError:
        raise ReportError(f"the text {path} is not valid UTF-8") from None


def _verify(args: argparse.Namespace, read_key: Callable[[argparse.Namespace], int]) -> list[str]:
    if bool(args.key_file) != bool(args.tokenizer):
        raise ReportError("--key-file and --tokenizer go together")
    if args.ngram_table and not args.key_file:
        raise ReportError("--ngram-table is for recomputing: add --key-file and --tokenizer")
    if args.key_file and not args.text:
        raise ReportError("recomputing needs the text: add --text FILE")
    try:
        jwks = json.loads(_read(args.jwks, "JWKS"))
    except ValueError:
        raise ReportError(f"the JWKS {args.jwks} is not JSON") from None
    token = _read(args.report, "report").decode("ascii", errors="replace")
    if is_receipt(token):
        return _verify_receipt(args, token, jwks)
    verified = verify(token, jwks)
    lines = [f"signature valid (key {verified.kid})"]
    if args.text is None:
        lines.append("text not checked (no --text)")
        return lines
    text = _text(args.text)
    check_text(verified.payload, text)
    lines.append(f"text matches (sha256 {verified.payload['text']['sha256']})")
    if args.key_file:
        from detector.cli.errors import CliError
        from detector.text.tokenizers import TokenizerError, load_tokenizer

        try:
            key = read_key(args)
            tokenizer = load_tokenizer(args.tokenizer)
        except (CliError, TokenizerError) as exc:
            raise ReportError(str(exc)) from None
        table = _table(args.ngram_table) if args.ngram_table else None
        got = recompute(verified.payload, text, key, tokenizer, args.hypothesis, table)
        decision = (
            f"; decision log10 p {got['decision_log10_p']:.3f} with {got['num_spans']} span(s)"
            if "decision_log10_p" in got
            else ""
        )
        lines.append(
            f"recomputed: {got['num_scored_tokens']} scored tokens, "
            f"log10 p {got['log10_p']:.3f}{decision}, as reported ({_table_words(got)})"
        )
    return lines


def _verify_receipt(args: argparse.Namespace, token: str, jwks: dict[str, Any]) -> list[str]:
    """A public verification's receipt: its signature and, with ``--text``, the text."""
    if args.key_file:
        raise ReportError("a receipt holds no hypotheses to recompute: drop --key-file")
    verified = verify_receipt(token, jwks)
    got = verified.payload
    named = f" ({got['model']})" if got["model"] else ""
    lines = [
        f"receipt signature valid (key {verified.kid})",
        f"{got['verdict']}{named}, {got['tokens_scored']} tokens scored, at {got['at']}",
    ]
    if args.text is None:
        lines.append("text not checked (no --text)")
    else:
        check_text(got, _text(args.text))
        lines.append(f"text matches (sha256 {got['text']['sha256']})")
    return lines


def _table(path: str) -> NgramTable:
    try:
        return NgramTable.load(path)
    except (OSError, ValueError, KeyError, LZMAError) as exc:
        raise ReportError(f"cannot read the n-gram table {path}: {exc}") from None


def _table_words(got: dict[str, Any]) -> str:
    """Which n-gram table filtered the recomputed tokens, in words."""
    if got["ngram_table"] is None:
        return "no n-gram table"
    named = "the report's" if got["ngram_table_named"] else "the local (the report names none)"
    return f"{named} n-gram table {got['ngram_table'][:12]}..."


def run_verify(args: argparse.Namespace, read_key: Callable[[argparse.Namespace], int]) -> int:
    try:
        lines = _verify(args, read_key)
    except ReportError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print("OK: " + "; ".join(lines))
    return EXIT_OK
