"""An audit's texts from uploaded files (provenance.audits.uploads): zips, documents and CSV
files in any mix, read by the API's readers, every refused file reported."""

from __future__ import annotations

import pytest
from django.utils import translation

from provenance.audits.uploads import UploadRefused, too_many_files, upload_texts
from provenance.errors import ProblemError
from tests.provenance import documents as make


@pytest.fixture(autouse=True)
def _english():
    with translation.override("en"):  # the messages are read in English here
        yield


def test_a_mix_of_kinds_gives_every_text_in_upload_order(settings):
    archive = make.zipped({"in/zip.txt": b"zipped"})
    texts = upload_texts(
        [("a.zip", archive), ("rows.csv", b"text\nfrom a row\n"), ("doc.md", b"markdown")]
    )
    assert texts == [
        {"client_id": "in/zip.txt", "text": "zipped"},
        {"client_id": "rows.csv:2", "text": "from a row"},
        {"client_id": "doc.md", "text": "markdown"},
    ]


def test_every_bad_file_is_reported_once(settings):
    settings.PROVENANCE_MAX_TEXT_BYTES = 20
    with pytest.raises(UploadRefused) as caught:
        upload_texts(
            [
                ("ok.txt", b"fine"),
                ("long.txt", b"x" * 30),
                ("x.zip", b"not a zip"),
                ("t.csv", b"body\nx\n"),
                ("e.exe", b"MZ"),
            ]
        )
    codes = [p.code for p in caught.value.problems]
    assert codes == [
        "document_corrupt",
        "document_no_text_column",
        "document_unsupported",
        "too_large",
    ]
    assert caught.value.status_code == 413  # one of them is a limit
    assert "x.zip: not a readable zip file" in caught.value.message  # the zip named as sent
    assert "long.txt is 30 bytes; the limit is 20 bytes" in caught.value.message


def test_a_refused_csv_row_keeps_its_place(settings):
    with pytest.raises(UploadRefused) as caught:
        upload_texts([("t.csv", b"id,text\n1,a\n2,\n")])
    problem = caught.value.problems[0]
    assert problem.row == 3 and problem.status_code == 400


def test_no_files_is_a_clear_refusal():
    with pytest.raises(ProblemError, match="choose at least one file"):
        upload_texts([])


def test_too_many_files_for_one_form_says_to_zip_them():
    problem = too_many_files(100)
    assert problem.status_code == 413 and "100 files" in problem.message
