"""Secrets the embedded default makes for itself (the KEK, Django's SECRET_KEY, the demo
login), each kept in one file of the data directory, readable and writable by its owner only
(0600), and the data directory itself (0700).

What another user could have written is never used: the data directory and every secret
file must belong to the running user and be writable by nobody else, or the product refuses
to start (``NotPrivateError``, naming the path and the fix). A file or directory that is only
readable by others is made private again, as before: nobody could have changed it.

A value is generated once, on first use, and read back by every later process: web, workers
and the sweeper started from the same data directory agree on it. Two processes starting at
once agree too: the value is written whole to a temporary file, then linked to its name,
which fails if another process got there first (that one's value is then used). Imported by
the settings: nothing here may import Django.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path


class NotPrivateError(ValueError):
    """A data directory or secret file that another user owns or may write: its content may
    have been chosen by someone else. The message names the path and the fix, on one line."""


def check_ours(path: Path, status: os.stat_result) -> None:
    """NotPrivateError unless ``path`` (described by ``status``) belongs to the running user
    and neither its group nor others may write it."""
    uid = os.geteuid()
    what = "directory" if stat.S_ISDIR(status.st_mode) else "file"
    if status.st_uid != uid:
        instead = "use a data directory of your own (PROVENANCE_DATA_DIR), or, "
        if what == "file":
            instead = ""
        raise NotPrivateError(
            f"the {what} {path} belongs to uid {status.st_uid}, not to this user (uid {uid}): "
            f"what it holds may be someone else's choice; {instead}if it and its content are "
            f"yours, make it yours: chown {uid} {path}"
        )
    if status.st_mode & 0o022:
        raise NotPrivateError(
            f"the {what} {path} may be written by its group or by others (mode "
            f"{stat.S_IMODE(status.st_mode):04o}): what it holds may be someone else's choice; "
            f"check it, then: chmod go-w {path}"
        )


def private_dir(path: Path) -> Path:
    """Create ``path`` readable by its owner only, or make an existing one so: however the
    product is started (manage.py, gunicorn, celery, the embedded runner) the database, key
    files and logs under it are not readable by others. NotPrivateError when it belongs to
    another user or others may write it.

    Returns the directory resolved (every symbolic link on the way followed once), the one
    that was checked: the product uses that path alone, so a link on the way that someone
    else may replace (one of theirs in a shared sticky directory such as /tmp) cannot send
    the running product to a directory of theirs after the check."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    real = path.resolve(strict=True)
    status = real.stat()
    check_ours(real, status)
    if status.st_mode & 0o077:
        real.chmod(0o700)
    return real


def private_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (0600), atomically: a crash leaves old or new."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text + "\n")
    os.replace(tmp, path)


def private_read(path: Path) -> str:
    """The value kept in ``path``: a plain file (never followed through a link) of this user
    that nobody else may write (NotPrivateError), made private again if others may read it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise ValueError(f"{path} must be a plain file ({exc.strerror})") from None
    with os.fdopen(fd) as handle:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise ValueError(f"{path} must be a plain file")
        check_ours(path, status)
        if status.st_mode & 0o077:
            os.fchmod(fd, 0o600)  # made readable by others since: private again
        value = handle.read().strip()
    if not value:
        raise ValueError(f"{path} is empty; remove it to generate a new value")
    return value


def private_load_or_create(path: Path, make: Callable[[], str]) -> str:
    """The value kept in ``path``, or ``make()``'s, kept there now if the file is absent."""
    if path.exists() or path.is_symlink():
        return private_read(path)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    value = make()
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(value + "\n")
    try:
        os.link(tmp, path)  # fails when another process created the file first
    except FileExistsError:
        return private_read(path)
    finally:
        tmp.unlink()
    return value


def generated_secret_key() -> str:
    """A Django SECRET_KEY: 64 URL-safe random bytes."""
    return secrets.token_urlsafe(64)
