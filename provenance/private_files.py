"""Secrets the embedded default makes for itself (the KEK, Django's SECRET_KEY), each kept in
one file of the data directory, readable and writable by its owner only (0600).

A value is generated once, on first use, and read back by every later process: web, workers
and the sweeper started from the same data directory agree on it. Two processes starting at
once agree too: the value is written whole to a temporary file, then linked to its name,
which fails if another process got there first (that one's value is then used). Imported by
the settings: nothing here may import Django.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path


def private_dir(path: Path) -> None:
    """Create ``path`` readable by its owner only, or make an existing one so (when this
    process owns it): however the product is started (manage.py, gunicorn, celery, the
    embedded runner) the database, key files and logs under it are not readable by others."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    status = path.stat()
    if status.st_mode & 0o077 and status.st_uid == os.getuid():
        path.chmod(0o700)


def private_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (0600), atomically: a crash leaves old or new."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text + "\n")
    os.replace(tmp, path)


def _private_read(path: Path) -> str:
    status = path.lstat()
    if not path.is_file() or path.is_symlink():
        raise ValueError(f"{path} must be a plain file")
    if status.st_mode & 0o077 and status.st_uid == os.getuid():
        path.chmod(0o600)  # made readable by others since: private again
    value = path.read_text().strip()
    if not value:
        raise ValueError(f"{path} is empty; remove it to generate a new value")
    return value


def private_load_or_create(path: Path, make: Callable[[], str]) -> str:
    """The value kept in ``path``, or ``make()``'s, kept there now if the file is absent."""
    if path.exists() or path.is_symlink():
        return _private_read(path)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    value = make()
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(value + "\n")
    try:
        os.link(tmp, path)  # fails when another process created the file first
    except FileExistsError:
        return _private_read(path)
    finally:
        tmp.unlink()
    return value


def generated_secret_key() -> str:
    """A Django SECRET_KEY: 64 URL-safe random bytes."""
    return secrets.token_urlsafe(64)
