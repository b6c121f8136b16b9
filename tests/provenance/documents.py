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
