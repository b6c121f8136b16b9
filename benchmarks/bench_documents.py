"""What hostile documents cost the request that reads them: small uploads built to make text
extraction slow or large (PDF pages sharing one dense content stream, a .docx of 10 MB of
XML, flat and deeply nested HTML), read by ``provenance.lib.documents.extract`` under the
default limits. Prints each case's file size, seconds, peak memory of the process so far, and
the outcome (characters extracted or the refusal code).

Run: ``.venv/bin/python benchmarks/bench_documents.py`` (about a minute).
"""

from __future__ import annotations

import io
import resource
import time
import zipfile
from collections.abc import Callable

from provenance.lib import documents
from tests.provenance.documents import dense_pdf  # the document tests' own costly PDF

LIMITS = documents.Limits(
    max_bytes=10 * 1024 * 1024, max_pages=300, max_text_bytes=200 * 1024, max_seconds=20.0
)


def xml_heavy_docx(xml_bytes: int) -> bytes:
    import docx

    template = io.BytesIO()
    docx.Document().save(template)
    source = zipfile.ZipFile(template)
    paragraph = b"<w:p><w:r><w:t>word word word word word word</w:t></w:r></w:p>"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "word/document.xml":
                body = paragraph * (xml_bytes // len(paragraph))
                data = data.replace(b"<w:body>", b"<w:body>" + body, 1)
            archive.writestr(info.filename, data)
    return out.getvalue()


CASES: list[tuple[str, str, Callable[[], bytes]]] = [
    ("PDF, 1 page, 200,000-operator stream", "pdf", lambda: dense_pdf(200_000, 1)),
    ("PDF, 300 pages sharing a 40,000-operator stream", "pdf", lambda: dense_pdf(40_000, 300)),
    (".docx, 10 MB of XML in 150,000 paragraphs", "docx", lambda: xml_heavy_docx(10_000_000)),
    ("HTML, 1 MB in 40,000 paragraphs", "html", lambda: b"<p>word word word word</p>" * 40_000),
    ("HTML, 10 MB in 380,000 paragraphs", "html", lambda: b"<p>word word word word</p>" * 380_000),
    ("HTML, 8 MB nested 1,000,000 deep", "html", lambda: b"<span>x " * 1_000_000),
]


def main() -> None:
    print(f"{'case':52} {'bytes':>10} {'seconds':>8} {'peak MB':>8}  outcome")
    for label, kind, build in CASES:
        content = build()
        start = time.perf_counter()
        try:
            outcome = f"{len(documents.extract(f'x.{kind}', content, LIMITS).text):,} chars"
        except documents.DocumentError as exc:
            outcome = f"refused: {exc.code}"
        seconds = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{label:52} {len(content):>10,} {seconds:>8.1f} {peak:>8.0f}  {outcome}")


if __name__ == "__main__":
    main()
