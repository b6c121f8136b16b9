"""Archives (provenance.lib.archives): a zip's documents in order, folders and hidden files
skipped, any unreadable member refusing the whole archive, and the archive's own limits."""

from __future__ import annotations

import pytest

from provenance.lib import archives, documents
from tests.provenance import documents as make

LIMITS = documents.Limits(max_bytes=1_000_000, max_pages=5)


def test_an_archive_yields_its_documents_in_order_skipping_folders_and_hidden_files():
    archive = make.zipped(
        {
            "b.txt": make.txt(["bee"]),
            "sub/a.docx": make.docx(["ay"]),
            "__MACOSX/sub/._a.docx": b"resource fork",
            ".DS_Store": b"junk",
            "sub/": b"",
        }
    )
    found = archives.extract_archive(archive, LIMITS)
    assert [(d.filename, d.kind, d.text) for d in found] == [
        ("b.txt", "txt", "bee"),
        ("sub/a.docx", "docx", "ay"),
    ]


def test_a_bad_member_refuses_the_whole_archive_naming_it():
    archive = make.zipped({"ok.txt": b"fine", "scan.pdf": make.image_only_pdf()})
    with pytest.raises(documents.DocumentError) as caught:
        archives.extract_archive(archive, LIMITS)
    assert caught.value.code == "image_only" and caught.value.message.startswith("scan.pdf")


def test_archive_limits_count_and_inflated_size():
    archive = make.zipped({f"{i}.txt": b"x" * 600 for i in range(3)})
    small = documents.Limits(1_000_000, 5, max_files=2)
    with pytest.raises(documents.DocumentError, match="3 documents; the limit is 2"):
        archives.extract_archive(archive, small)
    tight = documents.Limits(1_000_000, 5, max_archive_bytes=1000)
    with pytest.raises(documents.DocumentError, match="1800 bytes; the limit is 1000"):
        archives.extract_archive(archive, tight)
    with pytest.raises(documents.DocumentError, match="not a readable zip"):
        archives.extract_archive(b"PK\x03\x04 broken", LIMITS)


def test_an_archive_stops_at_its_time_limit():
    archive = make.zipped({f"{i}.txt": b"text" for i in range(3)})
    with pytest.raises(documents.DocumentError) as caught:
        archives.extract_archive(archive, documents.Limits(1_000_000, 5, max_archive_seconds=0))
    assert caught.value.code == "too_slow" and caught.value.filename == "archive"


def test_several_files_are_read_each_in_its_place_under_an_archives_limits():
    files = [("a.txt", b"alpha"), ("b.pdf", make.image_only_pdf()), ("c.md", b"# gamma")]
    found = archives.extract_files(files, LIMITS)
    assert [d.text for d in found if isinstance(d, documents.Document)] == ["alpha", "# gamma"]
    assert isinstance(found[1], documents.DocumentError) and found[1].code == "image_only"
    few = documents.Limits(1_000_000, 5, max_files=2)
    with pytest.raises(documents.DocumentError, match="the upload holds 3 documents"):
        archives.extract_files(files, few)
    tight = documents.Limits(1_000_000, 5, max_archive_bytes=8)
    with pytest.raises(documents.DocumentError, match="the limit is 8") as caught:
        archives.extract_files([("a.txt", b"12345"), ("b.txt", b"6789")], tight)
    assert caught.value.too_large
