"""A check as an export row (``fields.EXPORT_FIELDS``), shared by a check's CSV and an audit's
CSV and JSON exports, and the hypothesis rows of a check's CSV."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rest_framework import serializers

from provenance.checks.fields import EXPORT_FIELDS, HYPOTHESIS_EXPORT
from provenance.checks.models import Check

_DATETIME = serializers.DateTimeField()  # the API's format, so an export reads like the API


def export_row(check: Check) -> dict[str, Any]:
    """One flat dict, the fields of ``EXPORT_FIELDS`` in order (``best_key`` loaded with it)."""
    derived = {
        "check_id": str(check.id),
        "best_key": check.best_key.name if check.best_key else None,
        "key_fpr_above_threshold": key_fpr_above_threshold(check),
        "created_at": _DATETIME.to_representation(check.created_at),
        "finished_at": _DATETIME.to_representation(check.finished_at)
        if check.finished_at
        else None,
        **longest_span(check.spans or []),
    }
    return {
        name: derived[name] if name in derived else getattr(check, name) for name in EXPORT_FIELDS
    }


def hypothesis_rows(
    row: dict[str, Any], hypotheses: list[dict[str, Any]]
) -> Iterator[dict[str, Any]]:
    """The check's row once per hypothesis (as the API answers it) with its columns added
    (``HYPOTHESIS_EXPORT``); once, with them empty, when no hypothesis was tested."""
    for h in hypotheses or [{}]:
        yield {**row, **{column: h.get(name) for column, name in HYPOTHESIS_EXPORT.items()}}


def key_fpr_above_threshold(check: Check) -> bool | None:
    """Whether the best key's measured false-positive rate, as stored when the check was
    scored, lay above the threshold on some genre (None: the key was not calibrated then)."""
    measured = check.key_measured_fpr
    return None if measured is None else bool(measured["above_threshold"])


def longest_span(spans: list[dict[str, Any]]) -> dict[str, Any]:
    """The number of spans and the character range of the longest (None without spans)."""
    longest = max(spans, key=lambda s: s["end_char"] - s["start_char"], default=None)
    return {
        "num_spans": len(spans),
        "longest_span_start_char": longest["start_char"] if longest else None,
        "longest_span_end_char": longest["end_char"] if longest else None,
    }


# A cell a spreadsheet would read as a formula (or a DDE call): = + - @, or a tab or carriage
# return in front of one (OWASP's list for CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(row: dict[str, Any]) -> dict[str, Any]:
    """A CSV row whose text cells cannot run as formulas: a cell that starts like one gets a
    leading apostrophe (spreadsheets show the text; numbers are left as they are)."""
    return {
        name: f"'{value}" if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value
        for name, value in row.items()
    }
