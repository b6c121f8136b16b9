"""Text out of uploaded documents (.txt, .md, .html, .docx, .pdf); zip archives of them are
read by ``provenance.lib.archives``.

Plain Python, no Django: the workers call it (the web process only ``precheck``s a file's
name and size), then check the extracted text like a pasted one. Every refusal is a
``DocumentError`` whose message names the file and the reason (``code`` is stable for
clients: unsupported, encrypted, corrupt, image_only, empty, too_large, too_many_pages,
too_many_files, too_complex, too_slow). What the libraries read:

* .txt and .md as UTF-8 (a BOM is dropped; UTF-16 with a BOM is accepted), CRLF as LF;
  Markdown is checked as written, since that is what a model emits;
* .html with lxml (the encoding found by BeautifulSoup): visible text only (no script,
  style, head), one blank line between block elements, whitespace collapsed as a browser
  would except inside ``pre``;
* .docx with python-docx: paragraphs and table cells in document order, one per line, a
  blank line between paragraphs;
* .pdf with pypdf: each page's text layer in order, pages separated by a blank line; the
  lines of a paragraph are joined (layout mode finds the paragraph gaps). A PDF without a
  text layer (scanned pages) is refused as image-only: there is no OCR here.

Extraction runs on the workers, and every input still bounds its cost: file and archive
sizes (the zip reader stops each member at its declared size), the inflated size of a .docx
and of its XML, PDF pages, pypdf's per-page parsing budget, the extracted text of a PDF (read no
further than the check's text limit), and a wall-clock budget checked between PDF pages and
between archive members. Those checks give a precise refusal where they look; the deadline
itself holds everywhere: ``extract`` reads each document in a separate process
(``provenance.lib.isolation``) that is killed when the deadline passes, inside a page, a
regular expression or an encoding guess alike.
"""

from __future__ import annotations

import dataclasses
import io
import re
import time
import zipfile
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

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
    max_text_bytes: int | None = None  # extracted text (UTF-8); None: no limit here
    max_seconds: float = 20.0  # reading one document
    max_archive_seconds: float = 120.0  # reading every document of one archive


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
        return self.code in TOO_LARGE


TOO_LARGE = frozenset(("too_large", "too_many_pages", "too_many_files", "too_complex", "too_slow"))
# Every ``DocumentError.code`` (the API answers ``document_<code>``).
CODES = ("unsupported", "encrypted", "corrupt", "image_only", "empty", *sorted(TOO_LARGE))


def extract(
    filename: str, content: bytes, limits: Limits, deadline: float | None = None
) -> Document:
    """The text of one document; raises ``DocumentError`` naming what is wrong. ``deadline``
    (``time.monotonic()``) defaults to ``limits.max_seconds`` from the moment a reader takes
    the document; a given one (a batch's) also bounds the wait for a reader. The document is
    read in a separate process (``provenance.lib.isolation``) that is killed at the deadline,
    so no parser's loop, inside one page or one encoding guess, runs past it."""
    from provenance.lib import isolation

    name, _ = precheck(filename, len(content), limits)
    if deadline is None:  # a reader's start is not the document's time (``isolation.call``)
        seconds = limits.max_seconds
    else:
        in_time(name, deadline, limits.max_seconds)
        seconds = deadline - time.monotonic()
    request = {"filename": filename, "limits": dataclasses.asdict(limits)}
    try:
        answer = isolation.call("document", request, content, seconds, deadline)
    except isolation.Overrun:
        raise DocumentError(name, too_slow_reason(limits.max_seconds), "too_slow") from None
    except isolation.ReaderFailed:
        reason = "reading it stopped the reader (it needs more memory or time than allowed)"
        raise DocumentError(name, reason, "too_complex") from None
    if "document" in answer:
        return Document(**answer["document"])
    if "error" in answer:
        raise DocumentError(**answer["error"])
    raise DocumentError(name, "the document cannot be read", "corrupt")


def read(filename: str, content: bytes, limits: Limits, deadline: float) -> Document:
    """``extract`` in this process: the reading itself, checking ``deadline`` only where its
    loops look (what the reader process runs; callers use ``extract``)."""
    name, kind = precheck(filename, len(content), limits)
    text = _READERS[kind](name, content, limits, deadline)
    if "\x00" in text:
        text = text.replace("\x00", "")
    if not text.strip():
        raise DocumentError(name, "the document contains no text", "empty")
    return Document(filename=name, kind=kind, text=text)


def precheck(filename: str, size: int, limits: Limits) -> tuple[str, str]:
    """The document's name (without folders) and kind, from its name and size alone: what
    can be refused without reading the file (an unsupported type, a file over the limit)."""
    name = PurePosixPath(filename.replace("\\", "/")).name or "document"
    kind = KINDS.get(PurePosixPath(name).suffix.lower())
    if kind is None:
        raise DocumentError(name, f"unsupported file type; send {SUPPORTED}", "unsupported")
    if size > limits.max_bytes:
        reason = f"the file is {size} bytes; the limit is {limits.max_bytes}"
        raise DocumentError(name, reason, "too_large")
    return name, kind


def in_time(name: str, deadline: float, seconds: float) -> None:
    if time.monotonic() > deadline:
        raise DocumentError(name, too_slow_reason(seconds), "too_slow")


def too_slow_reason(seconds: float) -> str:
    """The reason of a ``too_slow`` refusal."""
    return f"reading it took longer than the limit of {seconds:g} s; send smaller files"


# --- readers ------------------------------------------------------------------------------


def _plain(name: str, content: bytes, limits: Limits, deadline: float) -> str:
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
_HIDDEN = frozenset(
    ["script", "style", "noscript", "template", "head", "svg", "math", "iframe", "object"]
)
# Private-use marks, replaced once the walk is done: paragraph ends, line breaks, and the
# spaces and tabs of preformatted text (kept as they are while other whitespace collapses).
_PARAGRAPH, _BREAK, _PRE_SPACE, _PRE_TAB = "\ue000", "\ue001", "\ue002", "\ue003"
# What an opening tag adds before its content (a block also ends with a paragraph mark).
_HTML_OPENS = {name: _PARAGRAPH for name in _BLOCKS} | {"br": _BREAK, "td": " ", "th": " "}


def _html(name: str, content: bytes, limits: Limits, deadline: float) -> str:
    """lxml's HTML parser (libxml2: about 3 s for 10 MB of markup, where BeautifulSoup's tree
    took a minute); the encoding is detected as BeautifulSoup does (declared, else UTF-8, else
    a guess), not libxml2's Latin-1 default."""
    import lxml.html
    from bs4 import UnicodeDammit
    from lxml import etree

    markup = UnicodeDammit(content, is_html=True).unicode_markup
    in_time(name, deadline, limits.max_seconds)
    try:
        root = lxml.html.document_fromstring(markup if markup is not None else content)
    except etree.ParserError:  # "Document is empty": nothing but whitespace or comments
        return ""
    except (ValueError, etree.LxmlError):
        raise DocumentError(name, "the HTML cannot be parsed", "corrupt") from None
    return _paragraphs("".join(_html_parts(root, name, limits, deadline)))


def _html_parts(root: Any, name: str, limits: Limits, deadline: float) -> list[str]:
    """The visible strings and marks under ``root`` in document order, in one walk."""
    from lxml import etree

    parts: list[str] = []
    in_pre = 0
    walker = etree.iterwalk(root, events=("start", "end", "comment", "pi"))
    for count, (event, element) in enumerate(walker):
        if count % 10_000 == 0:
            in_time(name, deadline, limits.max_seconds)
        tag = element.tag
        if event in ("comment", "pi"):  # no end event; only the text after it shows
            parts.append(_html_text(element.tail, in_pre))
        elif tag in _HIDDEN:  # its end event still comes, and brings its tail
            if event == "start":
                walker.skip_subtree()
            else:
                parts.append(_html_text(element.tail, in_pre))
        elif event == "start":
            parts.append(_HTML_OPENS.get(tag, ""))
            in_pre += tag == "pre"
            parts.append(_html_text(element.text, in_pre))
        else:
            parts.append(_PARAGRAPH if tag in _BLOCKS else "")
            in_pre -= tag == "pre"
            parts.append(_html_text(element.tail, in_pre))
    return parts


def _html_text(text: str | None, in_pre: int) -> str:
    if not text:
        return ""
    if in_pre:
        return text.replace(" ", _PRE_SPACE).replace("\t", _PRE_TAB)
    return re.sub(r"\s+", " ", text)


def _paragraphs(marked: str) -> str:
    text = marked.replace(_BREAK, "\n")
    blocks = (block.strip(" ") for block in text.split(_PARAGRAPH))
    lines = ("\n".join(line.strip(" ") for line in block.split("\n")) for block in blocks)
    text = "\n\n".join(block.strip("\n") for block in lines if block.strip())
    return text.replace(_PRE_SPACE, " ").replace(_PRE_TAB, "\t")


_NOT_DOCX = "the .docx file is corrupt or not a Word document"


def _docx(name: str, content: bytes, limits: Limits, deadline: float) -> str:
    if content.startswith(_CFB_MAGIC):
        reason = "the file is password-protected (or an old binary .doc); save it as plain .docx"
        raise DocumentError(name, reason, "encrypted")
    _check_zip_expansion(name, content, limits)
    try:
        import docx

        document = docx.Document(io.BytesIO(content))
        blocks = _docx_blocks(name, document, limits, deadline)
    except DocumentError:
        raise
    except Exception:  # python-docx raises zipfile, lxml and KeyError types for bad files
        raise DocumentError(name, _NOT_DOCX, "corrupt") from None
    return "\n\n".join(block for block in blocks if block.strip()).replace("\r", "")


def _docx_blocks(name: str, document: Any, limits: Limits, deadline: float) -> list[str]:
    # python-docx reads a paragraph's text in Python (about 0.3 ms each): 10 MB of XML with
    # 150,000 short paragraphs took 44 s, hence the time and text limits inside the loop.
    blocks: list[str] = []
    size = 0
    for block in document.iter_inner_content():
        in_time(name, deadline, limits.max_seconds)
        blocks.append(_docx_block(block))
        size += len(blocks[-1].encode("utf-8", "replace")) + 2
        _text_within(name, size, limits)
    return blocks


def _text_within(name: str, size: int, limits: Limits) -> None:
    """Stop reading a document whose text has already passed the check's limit."""
    if limits.max_text_bytes is not None and size > limits.max_text_bytes:
        reason = f"its text passes the limit of {limits.max_text_bytes} bytes"
        raise DocumentError(name, reason, "too_large")


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
    # Pictures inflate little; XML is what python-docx parses into a tree (35 MB of XML
    # peaked at 412 MB of memory), and 2 x 10 MB of XML holds far more than the text limit.
    xml = sum(info.file_size for info in infos if info.filename.endswith((".xml", ".rels")))
    if sum(info.file_size for info in infos) > 20 * limits.max_bytes or xml > 2 * limits.max_bytes:
        raise DocumentError(name, "the .docx file inflates beyond the size limit", "too_large")


# pypdf's parsing work for one page's content stream (operands and operators): a dense page
# of text needs under 50,000; reading 200,000 takes seconds in pure Python.
_PDF_PAGE_BUDGET = 250_000


def _pdf(name: str, content: bytes, limits: Limits, deadline: float) -> str:
    from pypdf import PdfReader
    from pypdf.errors import LimitReachedError, PyPdfError

    if not content.lstrip()[:1024].startswith(b"%PDF"):
        raise DocumentError(name, "the file is not a PDF", "corrupt")
    try:
        texts = _pdf_pages(name, PdfReader(io.BytesIO(content)), limits, deadline)
    except DocumentError:
        raise
    except LimitReachedError:
        raise DocumentError(name, "the PDF is too complex to read", "too_complex") from None
    except NotImplementedError:  # an encryption scheme pypdf cannot open
        raise DocumentError(name, "the PDF is password-protected", "encrypted") from None
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, OSError):
        raise DocumentError(name, "the PDF is corrupt", "corrupt") from None
    except RecursionError:  # objects nested past Python's stack
        raise DocumentError(name, "the PDF is corrupt", "corrupt") from None
    if not any(text.strip() for text in texts):
        reason = "the PDF has no text layer (scanned images?); run OCR on it first"
        raise DocumentError(name, reason, "image_only")
    return "\n\n".join(text for text in texts if text.strip())


def _pdf_page_text(page: Any) -> str:
    """A page's text as paragraphs. pypdf's layout mode leaves a blank line where lines lie
    further apart than the line spacing; the lines of a paragraph are joined, since a PDF
    breaks them where the page is full, not where the writer did (with a space, or nothing
    after a hyphen or beside Chinese and Japanese characters)."""
    from pypdf.errors import LimitReachedError

    try:
        laid_out = page.extract_text(extraction_mode="layout") or ""
    except LimitReachedError:
        raise
    except Exception:  # layout mode fails on some fonts where the plain reading does not
        plain = page.extract_text() or ""
        return "\n".join(line.strip() for line in plain.splitlines() if line.strip())
    paragraphs = (_pdf_lines(block) for block in re.split(r"\n[ \t]*\n", laid_out))
    return "\n\n".join(_pdf_unwrap(lines) for lines in paragraphs if lines)


def _pdf_lines(block: str) -> list[str]:
    # Layout mode pads with spaces to place words where they stand on the page.
    lines = (re.sub(r"[ \t]{2,}", " ", line).strip() for line in block.splitlines())
    return [line for line in lines if line]


def _pdf_unwrap(lines: list[str]) -> str:
    text = lines[0]
    for line in lines[1:]:
        glued = text.endswith("-") or _unspaced(text[-1]) or _unspaced(line[0])
        text += line if glued else " " + line
    return text


def _unspaced(char: str) -> bool:
    """Chinese and Japanese characters and punctuation: no space where their lines wrap."""
    return (
        "\u3000" <= char <= "\u30ff"
        or "\u3400" <= char <= "\u4dbf"
        or "\u4e00" <= char <= "\u9fff"
        or "\uf900" <= char <= "\ufaff"
        or "\uff00" <= char <= "\uffef"
    )


def _pdf_pages(name: str, reader: Any, limits: Limits, deadline: float) -> list[str]:
    """Each page's text, stopping at the page, time and text limits."""
    from pypdf import apply_configuration

    if reader.is_encrypted and not reader.decrypt(""):  # "" opens owner-only protection
        raise DocumentError(name, "the PDF is password-protected", "encrypted")
    pages = len(reader.pages)
    if pages > limits.max_pages:
        reason = f"the PDF has {pages} pages; the limit is {limits.max_pages}"
        raise DocumentError(name, reason, "too_many_pages")
    texts: list[str] = []
    size = 0
    with apply_configuration(stream_parsing_work_maximum_count=_PDF_PAGE_BUDGET):
        for page in reader.pages:
            in_time(name, deadline, limits.max_seconds)
            texts.append(_pdf_page_text(page))
            size += len(texts[-1].encode("utf-8", "replace"))
            _text_within(name, size, limits)
    return texts


_READERS = {"txt": _plain, "md": _plain, "html": _html, "docx": _docx, "pdf": _pdf}


# --- in the reader process (``provenance.lib.isolation``) -----------------------------------


def isolated_read(request: dict[str, Any], content: bytes, seconds: float) -> dict[str, Any]:
    """``read`` as the reader process runs it for ``extract``: the request and the answer
    as JSON."""
    limits = Limits(**request["limits"])
    try:
        found = read(request["filename"], content, limits, time.monotonic() + seconds)
    except DocumentError as exc:
        return {"error": {"filename": exc.filename, "reason": exc.reason, "code": exc.code}}
    return {"document": dataclasses.asdict(found)}


def isolated_warm_up() -> None:
    """Before a reader says it is ready: the libraries imported, and a small PDF and HTML
    page read (pypdf's layout mode loads more on its first page)."""
    import docx  # noqa: F401

    limits = Limits(max_bytes=len(_WARM_PDF), max_pages=1)
    deadline = time.monotonic() + 60
    read("warm.pdf", _WARM_PDF, limits, deadline)
    read("warm.html", b"<p>warm</p>", limits, deadline)


def _pdf_of(stream: bytes) -> bytes:
    """A one-page PDF showing ``stream`` in Helvetica (``_WARM_PDF``, a reader's first)."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


_WARM_PDF = _pdf_of(b"BT /F1 12 Tf 72 720 Td (warm) Tj ET")
