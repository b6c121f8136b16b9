"""An audit's texts from files uploaded on the audits page or to the API: zip archives,
documents (several at once) and CSV files with a text column, in any mix.

The web process only ``uploads_precheck``s them (types by name, sizes, the number of
documents: what costs nothing); a worker reads them (``staged_texts``, called by
``provenance.audits.extraction``). Each kind is read by the same code as a check's document
(``provenance.lib.archives``, ``provenance.lib.documents``, ``provenance.lib.tables`` under
``provenance.checks.services.validation.document_limits``), and every text is then held to
the check's own rules (``text_validate``). Every refused file is reported, not only the
first (``UploadRefused``); the audit then holds no texts.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import PurePosixPath

from django.utils.translation import gettext

from provenance.checks.services.validation import (
    archive_texts,
    document_limits,
    document_problem,
    text_validate,
)
from provenance.errors import PayloadTooLarge, ProblemError
from provenance.lib import archives, documents, tables


class UploadRefused(ProblemError):
    """One problem per refused file (``problems``); the status is 413 when any is a limit."""

    def __init__(self, problems: Sequence[ProblemError]):
        status = 413 if any(p.status_code == 413 for p in problems) else 400
        super().__init__("; ".join(p.message for p in problems), status_code=status)
        self.problems = list(problems)


# The kind of an uploaded file by its name (``Upload.Kind``); any other name is a document.
KINDS = {".zip": "archive", ".csv": "table"}


def upload_kind(name: str) -> str:
    return KINDS.get(PurePosixPath(name).suffix.lower(), "document")


def uploads_precheck(files: Sequence[tuple[str, str, int]]) -> list[ProblemError]:
    """What the request refuses of (kind, name, size) files before any is read: no file at
    all, a document of an unsupported type or over the size limit, more documents or more
    bytes of them than an audit may take, a CSV file over an archive's limit."""
    if not files:
        return [ProblemError(gettext("choose at least one file"))]
    limits = document_limits()
    problems: list[ProblemError] = []
    plain = [(name, size) for kind, name, size in files if kind == "document"]
    for kind, name, size in files:
        try:
            if kind == "document":
                documents.precheck(name, size, limits)
            elif kind == "table" and size > limits.max_archive_bytes:
                reason = f"the file is {size} bytes; the limit is {limits.max_archive_bytes}"
                raise tables.TableError(name, reason, "too_large")
        except documents.DocumentError as exc:
            problems.append(document_problem(exc))
    if plain:
        try:
            archives.batch_limits("upload", len(plain), sum(size for _, size in plain), limits)
        except documents.DocumentError as exc:
            problems.append(document_problem(exc))
    return problems


def upload_texts(
    files: Sequence[tuple[str, bytes]], *, text_column: str = "", id_column: str = ""
) -> list[dict[str, str]]:
    """``staged_texts`` of (name, content) files, each of the kind its name says."""
    if not files:
        raise ProblemError(gettext("choose at least one file"))
    staged = [(upload_kind(name), name, content) for name, content in files]
    return staged_texts(staged, text_column=text_column, id_column=id_column)


def staged_texts(
    files: Sequence[tuple[str, str, bytes]], *, text_column: str = "", id_column: str = ""
) -> list[dict[str, str]]:
    """An audit's ``texts`` (``client_id``, ``text``) from (kind, name, content) files: a
    zip's documents under their paths in it, a document under its name, a CSV's rows under
    their id column (else ``name:row``). Raises ``UploadRefused`` naming every bad file.
    Every file of the upload is read within one budget (``PROVENANCE_ARCHIVE_SECONDS``), so
    no upload holds a worker longer, however many files it holds."""
    deadline = time.monotonic() + document_limits().max_archive_seconds
    texts: list[dict[str, str]] = []
    problems: list[ProblemError] = []
    plain: list[tuple[str, bytes]] = []
    for kind, name, content in files:
        try:
            if kind == "archive":
                texts += _archive_texts(name, content, deadline)
            elif kind == "table":
                texts += _table_texts(name, content, text_column, id_column, deadline)
            else:
                plain.append((name, content))
        except ProblemError as exc:
            problems.append(exc)
    if plain:
        texts += _document_texts(plain, problems, deadline)
    problems += _text_problems(texts)
    if problems:
        raise UploadRefused(problems)
    return texts


def _archive_texts(name: str, content: bytes, deadline: float) -> list[dict[str, str]]:
    try:
        return archive_texts(content, deadline)
    except ProblemError as exc:
        if getattr(exc, "filename", "") == "archive":  # the zip itself: named as uploaded
            exc.filename = name  # type: ignore[attr-defined]
            exc.message = name + exc.message.removeprefix("archive")
        raise


def _table_texts(
    name: str, content: bytes, text_column: str, id_column: str, deadline: float
) -> list[dict[str, str]]:
    limits = document_limits()
    try:
        rows = tables.extract_table(name, content, limits, text_column, id_column, deadline)
    except tables.TableError as exc:
        problem = document_problem(exc)
        problem.column, problem.row = exc.column, exc.row  # type: ignore[attr-defined]
        raise problem from None
    return [{"client_id": row.client_id, "text": row.text} for row in rows]


def _document_texts(
    files: list[tuple[str, bytes]], problems: list[ProblemError], deadline: float
) -> list[dict[str, str]]:
    try:
        found = archives.extract_files(files, document_limits(), deadline)
    except documents.DocumentError as exc:  # a limit of the whole upload
        problems.append(document_problem(exc))
        return []
    texts = []
    for item in found:
        if isinstance(item, documents.DocumentError):
            problems.append(document_problem(item))
        else:
            texts.append({"client_id": item.filename, "text": item.text})
    return texts


def _text_problems(texts: list[dict[str, str]]) -> list[ProblemError]:
    """The check's rules for every extracted text, each refusal naming its file or row
    (``audit_submit`` applies them again, naming the index the API sent)."""
    problems: list[ProblemError] = []
    for item in texts:
        try:
            text_validate(item["text"], item["client_id"])
        except ProblemError as exc:
            problems.append(exc)
    return problems


def too_many_files(limit: int) -> PayloadTooLarge:
    """More files in one form than Django parses (``DATA_UPLOAD_MAX_NUMBER_FILES``)."""
    message = gettext("at most %(limit)s files at once; put more in a zip archive")
    return PayloadTooLarge(message % {"limit": limit}, code="document_too_many_files")
