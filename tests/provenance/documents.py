"""Documents of each supported type, generated in memory for the tests."""

from __future__ import annotations

import html
import io
import zipfile


def txt(paragraphs: list[str]) -> bytes:
    return "\n\n".join(paragraphs).encode("utf-8")


def md(paragraphs: list[str]) -> bytes:
    return ("# A heading\n\n" + "\n\n".join(paragraphs)).encode("utf-8")


def html_page(paragraphs: list[str]) -> bytes:
    body = "".join(f"<p>{html.escape(p)}</p>\n" for p in paragraphs)
    page = (
        "<!doctype html><html><head><title>ignored title</title><style>p {}</style></head>"
        f"<body><script>var ignored = 1;</script>{body}</body></html>"
    )
    return page.encode("utf-8")


def docx(paragraphs: list[str]) -> bytes:
    import docx as python_docx

    document = python_docx.Document()
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pdf(paragraphs: list[str], pages: int = 1) -> bytes:
    from fpdf import FPDF

    document = FPDF()
    document.set_font("Helvetica", size=11)
    for _ in range(pages):
        document.add_page()
        for paragraph in paragraphs:
            document.multi_cell(0, 6, paragraph)
            document.ln(4)
    return bytes(document.output())


def image_only_pdf() -> bytes:
    from fpdf import FPDF
    from PIL import Image

    picture = io.BytesIO()
    Image.new("RGB", (200, 80), (250, 250, 250)).save(picture, format="PNG")
    document = FPDF()
    document.add_page()
    document.image(picture, x=10, y=10, w=100)
    return bytes(document.output())


def encrypted_pdf(paragraphs: list[str]) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf(paragraphs))))
    writer.encrypt(user_password="secret", algorithm="AES-256")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def zipped(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return out.getvalue()


MAKERS = {"txt": txt, "md": md, "html": html_page, "docx": docx, "pdf": pdf}


def dense_pdf(operators: int, pages: int = 1) -> bytes:
    """A PDF whose pages all draw one content stream of ``operators`` text operators (a small
    file that costs a reader a lot of work)."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    stream = DecodedStreamObject()
    stream.set_data(("BT /F1 1 Tf " + "0 0 Td (a) Tj\n" * operators + "ET").encode())
    contents = writer._add_object(stream.flate_encode())
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    fonts = DictionaryObject({NameObject("/F1"): font})
    for _ in range(pages):
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Contents")] = contents
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): fonts})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def docx_with_xml_padding(paragraphs: list[str], padding: int) -> bytes:
    """A .docx whose document.xml carries ``padding`` extra bytes of whitespace (it compresses
    to almost nothing)."""
    source = zipfile.ZipFile(io.BytesIO(docx(paragraphs)))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "word/document.xml":
                data = data.replace(b"<w:body>", b"<w:body>" + b" " * padding, 1)
            archive.writestr(info.filename, data)
    return out.getvalue()


def crowded_pdf(commands: int) -> bytes:
    """A one-page PDF whose content stream shows ``commands`` one-letter strings, each far to
    the right of the last and on (almost) the same line: a few hundred bytes compressed, and
    work for pypdf's layout mode that grows faster than the commands (an attack on reading
    time within one page, where a deadline checked between pages never looks)."""
    import zlib

    stream = zlib.compress(b"BT /F1 1 Tf " + b"5000 -0.01 Td (a) Tj " * commands + b"ET", level=9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)
