"""The texts of an uploaded CSV file (an audit's batch): one text per row, from a named text
column, with an optional id column.

Plain Python, no Django. A CSV is a batch like a zip archive and is held to an archive's
limits (``documents.Limits``: ``max_archive_bytes`` for the file, ``max_files`` rows,
``max_archive_seconds`` to read it, in a reader process killed at the deadline, as
``provenance.lib.documents`` reads documents). The file is UTF-8 (a BOM is dropped); the
delimiter is found among comma, semicolon, tab and bar; the first row names the columns
(matched without regard to case or surrounding spaces). Rows with every cell empty are
skipped. A refusal is a ``TableError`` (a ``DocumentError``) naming the file, and the row
where there is one.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from provenance.lib.documents import DocumentError, Limits, in_time, too_slow_reason

# Tried in this order when the sample does not decide (``csv.Sniffer``).
DELIMITERS = ",;\t|"
# Id columns looked for when none is named.
ID_COLUMNS = ("id", "client_id")
# Every ``TableError.code`` beyond the documents' own (corrupt, empty, too_large,
# too_many_files, too_slow).
CODES = ("no_text_column", "no_id_column", "empty_text")


@dataclass(frozen=True)
class Row:
    client_id: str
    text: str


class TableError(DocumentError):
    """A CSV file that cannot be audited; ``column`` and ``row`` (1-based, the header is row
    1) say where, when it is one place."""

    def __init__(self, filename: str, reason: str, code: str, column: str = "", row: int = 0):
        super().__init__(filename, reason, code)
        self.column, self.row = column, row


def extract_table(
    filename: str,
    content: bytes,
    limits: Limits,
    text_column: str = "",
    id_column: str = "",
    deadline: float | None = None,
) -> list[Row]:
    """One ``Row`` per non-blank row of a CSV file. ``text_column`` defaults to ``text``;
    ``id_column`` to ``id`` or ``client_id`` when the file has one, else each row's client
    id is the file's name and its row number (``posts.csv:2``). Read in a reader process
    killed at ``deadline`` (``time.monotonic()``; default ``limits.max_archive_seconds``
    from the moment a reader takes the file), as documents are: guessing the dialect
    (``csv.Sniffer``'s regular expressions) can take tens of seconds on 60 KB."""
    from provenance.lib import isolation

    if len(content) > limits.max_archive_bytes:
        reason = f"the file is {len(content)} bytes; the limit is {limits.max_archive_bytes}"
        raise TableError(filename, reason, "too_large")
    if deadline is None:
        seconds = limits.max_archive_seconds
    else:
        in_time(filename, deadline, limits.max_archive_seconds)
        seconds = deadline - time.monotonic()
    request = {
        "filename": filename,
        "limits": dataclasses.asdict(limits),
        "text_column": text_column,
        "id_column": id_column,
    }
    try:
        answer = isolation.call("table", request, content, seconds, deadline)
    except isolation.Overrun:
        reason = too_slow_reason(limits.max_archive_seconds)
        raise TableError(filename, reason, "too_slow") from None
    except isolation.ReaderFailed:
        reason = "reading it stopped the reader (it needs more memory or time than allowed)"
        raise TableError(filename, reason, "too_complex") from None
    if "rows" in answer:
        return [Row(client_id, text) for client_id, text in answer["rows"]]
    if "error" in answer:
        raise TableError(**answer["error"])
    raise TableError(filename, "the file cannot be read", "corrupt")


def isolated_read(request: dict[str, Any], content: bytes, seconds: float) -> dict[str, Any]:
    """``read_table`` as the reader process runs it for ``extract_table`` (JSON in and out)."""
    limits = Limits(**request["limits"])
    deadline = time.monotonic() + seconds
    try:
        rows = read_table(
            request["filename"],
            content,
            limits,
            request["text_column"],
            request["id_column"],
            deadline,
        )
    except TableError as exc:
        error = {"filename": exc.filename, "reason": exc.reason, "code": exc.code}
        return {"error": {**error, "column": exc.column, "row": exc.row}}
    return {"rows": [[row.client_id, row.text] for row in rows]}


def read_table(
    filename: str,
    content: bytes,
    limits: Limits,
    text_column: str,
    id_column: str,
    deadline: float,
) -> list[Row]:
    """``extract_table`` in this process (what the reader process runs)."""
    try:
        decoded = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise TableError(filename, "the file is not UTF-8 text", "corrupt") from None
    if "\x00" in decoded:
        raise TableError(filename, "the file holds NUL characters", "corrupt")
    # A cell may hold a whole text (the check's limit); csv's default stops at 128 KiB. The
    # limit only ever grows, so other readers in the process lose nothing.
    csv.field_size_limit(max(csv.field_size_limit(), len(decoded) + 1))
    reader = csv.reader(io.StringIO(decoded, newline=""), _dialect(decoded))
    try:
        return _rows(filename, reader, limits, text_column, id_column, deadline)
    except csv.Error as exc:
        reason = f"not a readable CSV file (line {reader.line_num}: {exc})"
        raise TableError(filename, reason, "corrupt", row=reader.line_num) from None


def _dialect(decoded: str) -> type[csv.Dialect]:
    try:
        return csv.Sniffer().sniff(decoded[:65536], delimiters=DELIMITERS)
    except csv.Error:
        return csv.excel


def _rows(
    filename: str,
    lines: Iterator[list[str]],
    limits: Limits,
    text_column: str,
    id_column: str,
    deadline: float,
) -> list[Row]:
    header = [cell.strip().lower() for cell in next(lines, [])]
    if not any(header):
        raise TableError(filename, "the file holds no header row", "empty")
    text_at = _column(filename, header, text_column or "text", "no_text_column")
    id_at = _id_column(filename, header, id_column)
    found: list[Row] = []
    for number, cells in enumerate(lines, start=2):
        if number % 1000 == 0:
            in_time(filename, deadline, limits.max_archive_seconds)
        if not any(cell.strip() for cell in cells):
            continue
        if len(found) >= limits.max_files:
            reason = f"the file holds more than {limits.max_files} rows; that is the limit"
            raise TableError(filename, reason, "too_many_files")
        text = cells[text_at] if text_at < len(cells) else ""
        if not text.strip():
            raise TableError(filename, f"row {number}: the text is empty", "empty_text", row=number)
        client_id = cells[id_at].strip() if id_at is not None and id_at < len(cells) else ""
        found.append(Row(client_id=(client_id or f"{filename}:{number}")[:200], text=text))
    if not found:
        raise TableError(filename, "the file holds no rows of text", "empty")
    return found


def _column(filename: str, header: list[str], name: str, code: str) -> int:
    wanted = name.strip().lower()
    if wanted not in header:
        columns = ", ".join(cell for cell in header if cell)[:200]
        reason = f'no column "{name}"; the columns are: {columns}'
        raise TableError(filename, reason, code, column=name)
    return header.index(wanted)


def _id_column(filename: str, header: list[str], id_column: str) -> int | None:
    if id_column.strip():
        return _column(filename, header, id_column, "no_id_column")
    return next((header.index(name) for name in ID_COLUMNS if name in header), None)
