"""Every document of an uploaded zip archive (an audit's batch), or of several files
uploaded at once, each read by ``provenance.lib.documents``.

Plain Python, no Django. The archive bounds its own cost: the number of documents, their
declared uncompressed total, each member's size (the reader stops at its declared size, since
sizes in headers can lie) and a wall-clock budget: each member is read under its own deadline
and what is left of the archive's (``documents.extract`` kills the reading at the earlier).
Folders, macOS resource forks and hidden files are skipped; any member that cannot be read
refuses the whole archive with a ``DocumentError`` naming it. Several files uploaded at once
are held to the same limits as an archive's members (``extract_files``), each refusal in its
file's place.
"""

from __future__ import annotations

import io
import time
import zipfile
from collections.abc import Sequence
from pathlib import PurePosixPath

from provenance.lib.documents import Document, DocumentError, Limits, extract, in_time


def extract_archive(
    content: bytes, limits: Limits, deadline: float | None = None
) -> list[Document]:
    """Every document of a zip archive, in archive order; file names are paths inside it.
    Folders, macOS resource forks and hidden files are skipped; anything else that cannot
    be read refuses the whole archive. ``deadline`` (``time.monotonic()``): the end of the
    whole upload's budget, ``limits.max_archive_seconds`` from now by default."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(content))
    except (zipfile.BadZipFile, ValueError):
        raise DocumentError("archive", "not a readable zip file", "corrupt") from None
    members = [info for info in archive.infolist() if _is_document(info)]
    batch_limits("archive", len(members), sum(info.file_size for info in members), limits)
    if deadline is None:
        deadline = time.monotonic() + limits.max_archive_seconds
    found = []
    for info in members:
        in_time("archive", deadline, limits.max_archive_seconds)
        found.append(_archive_member(archive, info, limits, deadline))
    return found


def batch_limits(name: str, count: int, total: int, limits: Limits) -> None:
    """The limits of a batch of documents (a zip's members, or files uploaded together):
    at least one, at most ``max_files``, at most ``max_archive_bytes`` in all."""
    if not count:
        raise DocumentError(name, f"the {name} holds no documents", "empty")
    if count > limits.max_files:
        reason = f"the {name} holds {count} documents; the limit is {limits.max_files}"
        raise DocumentError(name, reason, "too_many_files")
    if total > limits.max_archive_bytes:
        reason = f"the documents add up to {total} bytes; the limit is {limits.max_archive_bytes}"
        raise DocumentError(name, reason, "too_large")


def extract_files(
    files: Sequence[tuple[str, bytes]], limits: Limits, deadline: float | None = None
) -> list[Document | DocumentError]:
    """Several documents uploaded at once, under an archive's limits and time budget
    (``deadline``, as ``extract_archive``'s): each file's document, or its refusal in its
    place (the caller shows every one). A limit of the whole batch raises."""
    batch_limits("upload", len(files), sum(len(content) for _, content in files), limits)
    if deadline is None:
        deadline = time.monotonic() + limits.max_archive_seconds
    found: list[Document | DocumentError] = []
    for name, content in files:
        in_time("upload", deadline, limits.max_archive_seconds)
        try:
            found.append(_member(name, content, limits, deadline, "upload"))
        except DocumentError as exc:
            found.append(exc)
    return found


def _member(name: str, content: bytes, limits: Limits, deadline: float, batch: str) -> Document:
    """One document of a batch, read within its own limit and what is left of the batch's
    (a document cut by the batch's deadline is refused as the batch)."""
    try:
        return extract(name, content, limits, min(deadline, time.monotonic() + limits.max_seconds))
    except DocumentError as exc:
        if exc.code == "too_slow":
            in_time(batch, deadline, limits.max_archive_seconds)
        raise


def _is_document(info: zipfile.ZipInfo) -> bool:
    path = PurePosixPath(info.filename)
    hidden = any(part.startswith(".") or part == "__MACOSX" for part in path.parts)
    return not info.is_dir() and not hidden


def _archive_member(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: Limits, deadline: float
) -> Document:
    name = info.filename[:200]
    if info.flag_bits & 0x1:
        raise DocumentError(name, "the archive member is encrypted", "encrypted")
    if info.file_size > limits.max_bytes:
        reason = f"the file is {info.file_size} bytes; the limit is {limits.max_bytes}"
        raise DocumentError(name, reason, "too_large")
    try:
        with archive.open(info) as member:
            data = member.read(limits.max_bytes + 1)  # sizes in headers can lie
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError):
        raise DocumentError(name, "the archive member cannot be decompressed", "corrupt") from None
    document = _member(name, data, limits, deadline, "archive")
    return Document(filename=name, kind=document.kind, text=document.text)
