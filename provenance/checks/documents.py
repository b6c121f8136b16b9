"""Text out of uploaded documents (.txt, .md, .html, .docx, .pdf) and zip archives of them.

Plain Python, no Django: the API and the form call it, then check the extracted text like a
pasted one. Every refusal is a ``DocumentError`` whose message names the file and the reason
(``code`` is stable for clients: unsupported, encrypted, corrupt, image_only, empty,
too_large, too_many_pages, too_many_files). What the libraries read:

* .txt and .md as UTF-8 (a BOM is dropped; UTF-16 with a BOM is accepted), CRLF as LF;
  Markdown is checked as written, since that is what a model emits;
* .html with BeautifulSoup: visible text only (no script, style, head), one blank line
  between block elements, whitespace collapsed as a browser would except inside ``pre``;
* .docx with python-docx: paragraphs and table cells in document order, one per line, a
  blank line between paragraphs;
* .pdf with pypdf: each page's text layer in order, pages separated by a blank line. A PDF
  without a text layer (scanned pages) is refused as image-only: there is no OCR here.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass
from pathlib import PurePosixPath

KINDS = {".txt": "txt", ".md": "md", ".markdown": "md", ".html": "html", ".htm": "html"}
KINDS |= {".docx": "docx", ".pdf": "pdf"}
SUPPORTED = ".txt, .md, .html, .docx, .pdf"
_CFB_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # OLE compound file: encrypted Office or .doc


@dataclass(frozen=True)
class Limits:
    max_bytes: int  # one document's file size
    max_pages: int  # pages of one PDF
    max_files: int = 10_000  # documents in one archive
    max_archive_bytes: int = 64 * 1024 * 1024  # all documents of an archive, uncompressed


@dataclass(frozen=True)
class Document:
    filename: str
    kind: str
    text: str


class DocumentError(ValueError):
    """A document that cannot be checked; ``message`` names the file and the reason."""

    def __init__(self, filename: str, reason: str, code: str):
        self.filename, self.reason, self.code = filename, reason, code
        self.message = f"{filename}: {reason}" if filename else reason
        super().__init__(self.message)

    @property
    def too_large(self) -> bool:
        return self.code in ("too_large", "too_many_pages", "too_many_files")


def extract(filename: str, content: bytes, limits: Limits) -> Document:
    """The text of one document; raises ``DocumentError`` naming what is wrong."""
    name = PurePosixPath(filename.replace("\\", "/")).name or "document"
    kind = KINDS.get(PurePosixPath(name).suffix.lower())
    if kind is None:
        raise DocumentError(name, f"unsupported file type; send {SUPPORTED}", "unsupported")
    if len(content) > limits.max_bytes:
        raise DocumentError(
            name, f"the file is {len(content)} bytes; the limit is {limits.max_bytes}", "too_large"
        )
    text = _READERS[kind](name, content, limits)
    if "\x00" in text:
        text = text.replace("\x00", "")
    if not text.strip():
        raise DocumentError(name, "the document contains no text", "empty")
    return Document(filename=name, kind=kind, text=text)


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
    return [_archive_member(archive, info, limits) for info in members]


def _is_document(info: zipfile.ZipInfo) -> bool:
    path = PurePosixPath(info.filename)
    hidden = any(part.startswith(".") or part == "__MACOSX" for part in path.parts)
    return not info.is_dir() and not hidden


def _archive_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: Limits) -> Document:
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
    document = extract(name, data, limits)
    return Document(filename=name, kind=document.kind, text=document.text)


# --- readers ------------------------------------------------------------------------------


def _plain(name: str, content: bytes, limits: Limits) -> str:
    if content.startswith((b"\xff\xfe", b"\xfe\xff")):
        codec = "utf-16"
    else:
        codec = "utf-8-sig"
    try:
        text = content.decode(codec)
    except UnicodeDecodeError:
        raise DocumentError(name, "the file is not UTF-8 text", "corrupt") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


# Elements that start a new paragraph in the extracted text.
_BLOCKS = frozenset(
    (
        "address article aside blockquote caption dd details div dl dt fieldset figcaption "
        "figure footer form h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section summary "
        "table tr ul"
    ).split()
)
_HIDDEN = ["script", "style", "noscript", "template", "head", "svg", "math", "iframe", "object"]
# Private-use marks, replaced once the walk is done: paragraph ends, line breaks, and the
# spaces and tabs of preformatted text (kept as they are while other whitespace collapses).
_PARAGRAPH, _BREAK, _PRE_SPACE, _PRE_TAB = "\ue000", "\ue001", "\ue002", "\ue003"


def _html(name: str, content: bytes, limits: Limits) -> str:
    from bs4 import BeautifulSoup, NavigableString, Tag
    from bs4.element import PreformattedString

    try:
        soup = BeautifulSoup(content, "html.parser")
    except Exception:  # html.parser is lenient; anything it raises means an unusable file
        raise DocumentError(name, "the HTML cannot be parsed", "corrupt") from None
    for tag in soup(_HIDDEN):
        tag.decompose()
    parts: list[str] = []
    for node in soup.descendants:  # a generator: deep nesting does not recurse
        if isinstance(node, PreformattedString):  # comments, doctype, CDATA
            continue
        if isinstance(node, NavigableString):
            if node.find_parent("pre") is not None:
                parts.append(str(node).replace(" ", _PRE_SPACE).replace("\t", _PRE_TAB))
            else:
                parts.append(re.sub(r"\s+", " ", str(node)))
        elif not isinstance(node, Tag):
            continue
        elif node.name == "br":
            parts.append(_BREAK)
        elif node.name in _BLOCKS:
            node.insert_after(NavigableString(_PARAGRAPH))  # ends the block, read later
            parts.append(_PARAGRAPH)
        elif node.name in ("td", "th"):
            parts.append(" ")
    return _paragraphs("".join(parts))


def _paragraphs(marked: str) -> str:
    text = marked.replace(_BREAK, "\n")
    blocks = (block.strip(" ") for block in text.split(_PARAGRAPH))
    lines = ("\n".join(line.strip(" ") for line in block.split("\n")) for block in blocks)
    text = "\n\n".join(block.strip("\n") for block in lines if block.strip())
    return text.replace(_PRE_SPACE, " ").replace(_PRE_TAB, "\t")


_NOT_DOCX = "the .docx file is corrupt or not a Word document"


def _docx(name: str, content: bytes, limits: Limits) -> str:
    if content.startswith(_CFB_MAGIC):
        reason = "the file is password-protected (or an old binary .doc); save it as plain .docx"
        raise DocumentError(name, reason, "encrypted")
    _check_zip_expansion(name, content, limits)
    try:
        import docx

        document = docx.Document(io.BytesIO(content))
        blocks = [_docx_block(block) for block in document.iter_inner_content()]
    except DocumentError:
        raise
    except Exception:  # python-docx raises zipfile, lxml and KeyError types for bad files
        raise DocumentError(name, _NOT_DOCX, "corrupt") from None
    return "\n\n".join(block for block in blocks if block.strip()).replace("\r", "")


def _docx_block(block: object) -> str:
    from docx.table import Table

    if isinstance(block, Table):
        return "\n".join(cell.text for row in block.rows for cell in row.cells if cell.text)
    return str(getattr(block, "text", ""))


def _check_zip_expansion(name: str, content: bytes, limits: Limits) -> None:
    """A .docx is a zip: refuse one that would inflate far beyond the size limit."""
    try:
        infos = zipfile.ZipFile(io.BytesIO(content)).infolist()
    except (zipfile.BadZipFile, ValueError):
        raise DocumentError(name, _NOT_DOCX, "corrupt") from None
    if sum(info.file_size for info in infos) > 20 * limits.max_bytes:
        raise DocumentError(name, "the .docx file inflates beyond the size limit", "too_large")


def _pdf(name: str, content: bytes, limits: Limits) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    if not content.lstrip()[:1024].startswith(b"%PDF"):
        raise DocumentError(name, "the file is not a PDF", "corrupt")
    try:
        reader = PdfReader(io.BytesIO(content))
        if reader.is_encrypted and not reader.decrypt(""):  # "" opens owner-only protection
            raise DocumentError(name, "the PDF is password-protected", "encrypted")
        pages = len(reader.pages)
        if pages > limits.max_pages:
            reason = f"the PDF has {pages} pages; the limit is {limits.max_pages}"
            raise DocumentError(name, reason, "too_many_pages")
        texts = [page.extract_text() or "" for page in reader.pages]
    except DocumentError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, IndexError, OSError):
        raise DocumentError(name, "the PDF is corrupt", "corrupt") from None
    except NotImplementedError:  # an encryption scheme pypdf cannot open
        raise DocumentError(name, "the PDF is password-protected", "encrypted") from None
    if pages and not any(text.strip() for text in texts):
        reason = "the PDF has no text layer (scanned images?); run OCR on it first"
        raise DocumentError(name, reason, "image_only")
    cleaned = ("\n".join(line.rstrip() for line in text.splitlines()) for text in texts)
    return "\n\n".join(text.strip("\n") for text in cleaned if text.strip())


_READERS = {"txt": _plain, "md": _plain, "html": _html, "docx": _docx, "pdf": _pdf}
