"""What the keyed draw did for a reply, handed from vLLM's engine to its API server.

On vLLM's OpenAI server the sampler runs in the engine's process and the provenance headers
in the server's (``generator.provenance_asgi``). For a non-streaming request the headers'
middleware asks for a record: it puts a fresh random token in the request's ``vllm_xargs``
(``RECORD_ARG``, any client-sent value dropped), our logits processor keeps a
``generator.core.DrawRecord`` for that request and, after every step, writes it to
``$PROVENANCE_RECORD_DIR/<token>.json`` (atomically: a reader sees a whole record). The
engine writes a reply's last step before the server gets the reply, so when the response
starts the file holds the whole draw; the middleware reads it, then deletes it. A streamed
reply's record is read the same way when its last event passes, for a final ``provenance``
event.

The directory is private: created 0700, and refused (``RecordDirError``) when it is a symlink,
owned by another user or writable by group or others; record files are opened inside it by
descriptor with ``O_NOFOLLOW``, so a planted link is never followed.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import stat
import time
from pathlib import Path
from typing import Any

from generator import config
from generator.config import RECORD_DIR_ENV
from generator.core import DrawRecord

log = logging.getLogger(__name__)

__all__ = ["RECORD_DIR_ENV"]  # re-exported from generator.config
RECORD_ARG = "provenance_record"
_TOKEN = re.compile(r"[0-9a-f]{32}")
STALE_AFTER_S = 600.0  # records nobody read (a client that hung up) are pruned after this


def record_dir() -> Path | None:
    """``$PROVENANCE_RECORD_DIR``, or None when replies are not recorded."""
    value = config.record_dir()
    return Path(value) if value else None


def new_token() -> str:
    return secrets.token_hex(16)


def record_token(extra_args: Any) -> str | None:
    """The record token of a request's ``extra_args``, if well formed (32 hex digits: a file
    name under the record directory and nothing else)."""
    value = (extra_args or {}).get(RECORD_ARG) if isinstance(extra_args, dict) else None
    return value if isinstance(value, str) and _TOKEN.fullmatch(value) else None


class RecordDirError(ValueError):
    """The record directory is not private to this server (its message names the path)."""


def _open_dir(directory: Path, *, create: bool) -> int:
    """A descriptor of ``directory`` after checking it is ours: a real directory (never
    followed through a symlink), owned by this user, writable by nobody else. Created 0700
    when ``create`` and absent."""
    if create:
        directory.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        raise RecordDirError(
            f"record directory {directory} is not a directory of its own ({exc.strerror})"
        ) from None
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        os.close(fd)
        raise RecordDirError(
            f"record directory {directory} must be owned by this user (uid {os.geteuid()}) "
            "and writable by nobody else"
        )
    return fd


def prepare(directory: Path) -> None:
    """Create the record directory (0700) or check an existing one; RecordDirError when it
    is a symlink, not ours or group/world-writable."""
    os.close(_open_dir(directory, create=True))


def write(directory: Path, token: str, record: DrawRecord) -> None:
    """The record as the engine has it now (the temporary name, then an atomic rename),
    created 0600 inside the checked directory, never through a symlink."""
    fd = _open_dir(directory, create=True)
    try:
        partial = f".{token}.{os.getpid()}.tmp"
        data = json.dumps(
            {"keyed": record.keyed, "with_choice": record.with_choice, "excess": record.excess}
        ).encode()
        try:
            os.unlink(partial, dir_fd=fd)  # a leftover of a killed writer, or a planted link
        except FileNotFoundError:
            pass
        out = os.open(
            partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=fd
        )
        with os.fdopen(out, "wb") as handle:
            handle.write(data)
        os.replace(partial, f"{token}.json", src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)


def take(directory: Path, token: str) -> DrawRecord | None:
    """Read and delete a reply's record; None if the engine wrote none, or if the directory
    or the file is not ours (a symlink is never followed)."""
    name = f"{token}.json"
    try:
        fd = _open_dir(directory, create=False)
    except RecordDirError:
        return None
    try:
        handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        with os.fdopen(handle, "rb") as stream:
            st = os.fstat(stream.fileno())
            ours = stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()
            raw = stream.read(4096) if ours else b""
        os.unlink(name, dir_fd=fd)
        data = json.loads(raw)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    try:
        return DrawRecord(
            keyed=int(data["keyed"]),
            with_choice=int(data["with_choice"]),
            excess=float(data["excess"]),
        )
    except (KeyError, TypeError, ValueError):
        return None


def prune(directory: Path, now: float | None = None) -> int:
    """Delete records older than ``STALE_AFTER_S`` (links included, never followed); the
    number deleted."""
    now = time.time() if now is None else now
    gone = 0
    try:
        fd = _open_dir(directory, create=False)
    except RecordDirError:
        return 0
    try:
        for name in os.listdir(fd):
            try:
                if now - os.stat(name, dir_fd=fd, follow_symlinks=False).st_mtime > STALE_AFTER_S:
                    os.unlink(name, dir_fd=fd)
                    gone += 1
            except OSError:
                continue
    finally:
        os.close(fd)
    return gone


def write_rows(rows: Any) -> None:
    """After a step: the record of every row that asked for one (``RowState.record_token``)."""
    directory = None
    for row in rows:
        token = getattr(row, "record_token", None)
        if token is None or row.record is None:
            continue
        directory = directory or record_dir()
        if directory is None:
            return
        try:
            write(directory, token, row.record)
        except (OSError, RecordDirError) as exc:  # the reply goes on; its headers fall back
            log.error("draw record not written: %s", exc)
            return
