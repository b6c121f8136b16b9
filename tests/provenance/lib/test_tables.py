"""CSV tables (provenance.lib.tables): one text per row from a named column, ids from an id
column or the row number, the delimiter found, and an archive's limits."""

from __future__ import annotations

import pytest

from provenance.lib import documents, tables

LIMITS = documents.Limits(max_bytes=1_000_000, max_pages=5)


def _rows(content: bytes, **kwargs):
    return [
        (r.client_id, r.text) for r in tables.extract_table("posts.csv", content, LIMITS, **kwargs)
    ]


def test_rows_come_from_the_text_column_with_ids_when_there_is_an_id_column():
    content = '\ufeffID,Text\n7,first\n8,"multi\nline, with comma"\n'.encode()
    assert _rows(content) == [("7", "first"), ("8", "multi\nline, with comma")]


def test_without_an_id_column_a_row_is_named_by_its_file_and_line():
    assert _rows(b"text\nalpha\n\nbeta\n") == [("posts.csv:2", "alpha"), ("posts.csv:4", "beta")]


def test_named_columns_are_matched_without_regard_to_case_and_spaces():
    content = b"post;body ;author\np1;hello;x\n"
    assert _rows(content, text_column="Body", id_column=" POST ") == [("p1", "hello")]


def test_a_semicolon_or_tab_delimiter_is_found():
    assert _rows(b"id\ttext\n1\thello, world\n") == [("1", "hello, world")]


def test_a_long_cell_is_read_whole():
    text = "word " * 60_000  # past csv's default field limit of 128 KiB
    assert _rows(f'text\n"{text}"\n'.encode())[0][1] == text


@pytest.mark.parametrize(
    ("content", "kwargs", "code", "match"),
    [
        (b"body\nx\n", {}, "no_text_column", 'no column "text"; the columns are: body'),
        (b"text\nx\n", {"id_column": "post"}, "no_id_column", 'no column "post"'),
        (b"id,text\n1,\n", {}, "empty_text", "row 2: the text is empty"),
        (b"text\n\n", {}, "empty", "no rows of text"),
        (b"", {}, "empty", "no header row"),
        (b"text\n\xff\xfe\xfa", {}, "corrupt", "not UTF-8"),
        (b"text\nnul\x00\n", {}, "corrupt", "NUL"),
    ],
)
def test_a_table_that_cannot_be_read_is_refused_with_its_reason(content, kwargs, code, match):
    with pytest.raises(tables.TableError, match=match) as caught:
        tables.extract_table("posts.csv", content, LIMITS, **kwargs)
    assert caught.value.code == code and caught.value.message.startswith("posts.csv: ")


def test_a_table_is_held_to_an_archives_limits():
    few = documents.Limits(1_000_000, 5, max_files=2)
    with pytest.raises(tables.TableError, match="more than 2 rows") as caught:
        tables.extract_table("t.csv", b"text\na\nb\nc\n", few)
    assert caught.value.too_large
    small = documents.Limits(1_000_000, 5, max_archive_bytes=10)
    with pytest.raises(tables.TableError, match="the limit is 10") as caught:
        tables.extract_table("t.csv", b"text\nabcdefghijk\n", small)
    assert caught.value.code == "too_large"


def test_an_empty_text_names_its_row():
    with pytest.raises(tables.TableError) as caught:
        tables.extract_table("t.csv", b"id,text\n1,ok\n2,  \n", LIMITS)
    assert caught.value.row == 3 and caught.value.code == "empty_text"
