"""What hostile documents cost the request that reads them: small uploads built to make text
extraction slow or large (PDF pages sharing one dense content stream, one page of 3,000
far-apart text commands, a .docx of 10 MB of XML, flat and deeply nested HTML), read by
``provenance.lib.documents.extract`` under the default limits, in its reader process. Prints
each case's file size, seconds, the peak memory of any reader so far, and the outcome
(characters extracted or the refusal code).

Then what the reader process costs a small document: each one read in this process
(``documents.read``) and through a waiting reader (``documents.extract``), interleaved, the
median of each and the difference; and a reader's start.

Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_documents.py`` (a few minutes).
"""

from __future__ import annotations

import io
import resource
import statistics
import time
import zipfile
from collections.abc import Callable

from provenance.lib import documents, isolation
from tests.provenance import documents as make  # the document tests' own costly PDFs

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
    ("PDF, 1 page, 200,000-operator stream", "pdf", lambda: make.dense_pdf(200_000, 1)),
    ("PDF, 300 pages sharing a 40,000-operator stream", "pdf", lambda: make.dense_pdf(40_000, 300)),
    ("PDF, 1 page, 3,000 far-apart text commands", "pdf", lambda: make.crowded_pdf(3_000)),
    (".docx, 10 MB of XML in 150,000 paragraphs", "docx", lambda: xml_heavy_docx(10_000_000)),
    ("HTML, 1 MB in 40,000 paragraphs", "html", lambda: b"<p>word word word word</p>" * 40_000),
    ("HTML, 10 MB in 380,000 paragraphs", "html", lambda: b"<p>word word word word</p>" * 380_000),
    ("HTML, 8 MB nested 1,000,000 deep", "html", lambda: b"<span>x " * 1_000_000),
]


SMALL: list[tuple[str, Callable[[], bytes]]] = [
    ("txt", lambda: make.txt(["A short essay of a few words."] * 40)),
    ("html", lambda: make.html_page(["A short essay of a few words."] * 40)),
    ("docx", lambda: make.docx(["A short essay of a few words."] * 40)),
    ("pdf", lambda: make.pdf(["A short essay of a few words."] * 40)),
]


def hostile() -> None:
    print(f"{'case':52} {'bytes':>10} {'seconds':>8} {'peak MB':>8}  outcome")
    for label, kind, build in CASES:
        content = build()
        documents.extract("warm.txt", b"warm", LIMITS)  # a reader waiting, as in a warm process
        start = time.perf_counter()
        try:
            outcome = f"{len(documents.extract(f'x.{kind}', content, LIMITS).text):,} chars"
        except documents.DocumentError as exc:
            outcome = f"refused: {exc.code}"
        seconds = time.perf_counter() - start
        isolation.close_idle()  # reaped, so that its peak counts in RUSAGE_CHILDREN
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"{label:52} {len(content):>10,} {seconds:>8.1f} {peak:>8.0f}  {outcome}")


def small(rounds: int = 200) -> None:
    print(f"\n{'small document':14} {'bytes':>7} {'here ms':>8} {'reader ms':>9} {'extra ms':>8}")
    for kind, build in SMALL:
        content = build()
        here, there = [], []
        for _ in range(rounds):
            start = time.perf_counter()
            documents.read(f"x.{kind}", content, LIMITS, time.monotonic() + 20)
            here.append(time.perf_counter() - start)
            start = time.perf_counter()
            documents.extract(f"x.{kind}", content, LIMITS)
            there.append(time.perf_counter() - start)
        a, b = statistics.median(here) * 1e3, statistics.median(there) * 1e3
        print(f"{kind:14} {len(content):>7,} {a:>8.2f} {b:>9.2f} {b - a:>8.2f}")
    starts = []
    for _ in range(5):
        isolation.close_idle()
        start = time.perf_counter()
        documents.extract("x.txt", b"a few words", LIMITS)
        starts.append(time.perf_counter() - start)
    print(f"a reader's start (first document of a process): {statistics.median(starts):.2f} s")


def main() -> None:
    hostile()
    small()


if __name__ == "__main__":
    main()
