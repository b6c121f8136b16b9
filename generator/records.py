"""What the keyed draw did for a reply, handed from vLLM's engine to its API server.

On vLLM's OpenAI server the sampler runs in the engine's process and the provenance headers
in the server's (``generator.provenance_asgi``). For a non-streaming request the headers'
middleware asks for a record: it puts a fresh random token in the request's ``vllm_xargs``
(``RECORD_ARG``, any client-sent value dropped), our logits processor keeps a
``generator.core.DrawRecord`` for that request and, after every step, writes it to
``$PROVENANCE_RECORD_DIR/<token>.json`` (atomically: a reader sees a whole record). The
engine writes a reply's last step before the server gets the reply, so when the response
starts the file holds the whole draw; the middleware reads it, then deletes it.

A streamed reply starts its headers before its first token, so it carries no record.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from pathlib import Path
from typing import Any

from generator.core import DrawRecord

RECORD_DIR_ENV = "PROVENANCE_RECORD_DIR"
RECORD_ARG = "provenance_record"
_TOKEN = re.compile(r"[0-9a-f]{32}")
STALE_AFTER_S = 600.0  # records nobody read (a client that hung up) are pruned after this


def record_dir() -> Path | None:
    """``$PROVENANCE_RECORD_DIR``, or None when replies are not recorded."""
    value = os.environ.get(RECORD_DIR_ENV, "")
    return Path(value) if value else None


def new_token() -> str:
    return secrets.token_hex(16)


def record_token(extra_args: Any) -> str | None:
    """The record token of a request's ``extra_args``, if well formed (32 hex digits: a file
    name under the record directory and nothing else)."""
    value = (extra_args or {}).get(RECORD_ARG) if isinstance(extra_args, dict) else None
    return value if isinstance(value, str) and _TOKEN.fullmatch(value) else None


def write(directory: Path, token: str, record: DrawRecord) -> None:
    """The record as the engine has it now (the temporary name, then an atomic rename)."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    final = directory / f"{token}.json"
    partial = directory / f".{token}.{os.getpid()}.tmp"
    partial.write_text(
        json.dumps(
            {"keyed": record.keyed, "with_choice": record.with_choice, "excess": record.excess}
        )
    )
    os.replace(partial, final)


def take(directory: Path, token: str) -> DrawRecord | None:
    """Read and delete a reply's record; None if the engine wrote none."""
    path = directory / f"{token}.json"
    try:
        data = json.loads(path.read_text())
        path.unlink()
    except (OSError, ValueError):
        return None
    try:
        return DrawRecord(
            keyed=int(data["keyed"]),
            with_choice=int(data["with_choice"]),
            excess=float(data["excess"]),
        )
    except (KeyError, TypeError, ValueError):
        return None


def prune(directory: Path, now: float | None = None) -> int:
    """Delete records older than ``STALE_AFTER_S``; the number deleted."""
    now = time.time() if now is None else now
    gone = 0
    try:
        entries = list(directory.iterdir())
    except OSError:
        return 0
    for path in entries:
        try:
            if now - path.stat().st_mtime > STALE_AFTER_S:
                path.unlink()
                gone += 1
        except OSError:
            continue
    return gone


def write_rows(rows: Any) -> None:
    """After a step: the record of every row that asked for one (``RowState.record_token``)."""
    directory = None
    for row in rows:
        token = getattr(row, "record_token", None)
        if token is None or row.record is None:
            continue
        directory = directory or record_dir()
        if directory is not None:
            write(directory, token, row.record)
