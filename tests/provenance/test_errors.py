"""Service errors: each kind carries its HTTP status and stable code; both may be overridden."""

from __future__ import annotations

import pytest

from provenance.errors import Conflict, PayloadTooLarge, ProblemError


@pytest.mark.parametrize(
    ("kind", "status", "code"),
    [
        (ProblemError, 400, "invalid"),
        (PayloadTooLarge, 413, "too_large"),
        (Conflict, 409, "conflict"),
    ],
)
def test_each_kind_has_its_status_and_code(kind, status, code):
    error = kind("the text is too long")
    assert (error.status_code, error.code, error.message) == (status, code, "the text is too long")
    assert str(error) == "the text is too long" and isinstance(error, ValueError)


def test_status_and_code_may_be_given_without_changing_the_class():
    error = ProblemError("no such key", status_code=404, code="key_unknown")
    assert (error.status_code, error.code) == (404, "key_unknown")
    assert ProblemError("other").status_code == 400  # the instance's override stays its own
