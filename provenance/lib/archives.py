"""Every document of an uploaded zip archive (an audit's batch), each read by
``provenance.lib.documents``.

Plain Python, no Django. The archive bounds its own cost: the number of documents, their
declared uncompressed total, each member's size (the reader stops at its declared size, since
sizes in headers can lie) and a wall-clock budget checked between members. Folders, macOS
resource forks and hidden files are skipped; any member that cannot be read refuses the whole
archive with a ``DocumentError`` naming it.
"""

from __future__ import annotations

import io
import time
import zipfile
from pathlib import PurePosixPath

from provenance.lib.documents import Document, DocumentError, Limits, extract, in_time


def extract_archive(content: bytes, limits: Limits) -> list[Document]:
    """Every document of a zip archive, in archive order; file names are paths inside it.
    Folders, macOS resource forks and hidden files are skipped; anything else that cannot
    be read refuses the whole archive."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(content))
    except (zipfile.BadZipFile, ValueError):
        raise DocumentError("archive", "not a readable zip file", "corrupt") from None
    members = [info for info in archive.infolist() if _is_document(info)]
    if not members:
        raise DocumentError("archive", "the archive holds no documents", "empty")
    if len(members) > limits.max_files:
        reason = f"the archive holds {len(members)} documents; the limit is {limits.max_files}"
        raise DocumentError("archive", reason, "too_many_files")
    declared = sum(info.file_size for info in members)
    if declared > limits.max_archive_bytes:
        reason = (
            f"the documents add up to {declared} bytes; the limit is {limits.max_archive_bytes}"
        )
        raise DocumentError("archive", reason, "too_large")
    deadline = time.monotonic() + limits.max_archive_seconds
    found = []
    for info in members:
        in_time("archive", deadline, limits.max_archive_seconds)
        found.append(_archive_member(archive, info, limits, deadline))
    return found


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
    document = extract(name, data, limits, min(deadline, time.monotonic() + limits.max_seconds))
    return Document(filename=name, kind=document.kind, text=document.text)
