"""The field lists named once (provenance.checks.fields) and everything derived from them: the
API's hypothesis serializer, the admin's inline, the columns the scorer writes, the CSV."""

from __future__ import annotations

from django.contrib import admin

from provenance.checks.admin import CheckAdmin
from provenance.checks.api.checks import HypothesisOutput
from provenance.checks.fields import (
    EXPORT_FIELDS,
    HYPOTHESIS_COLUMNS,
    HYPOTHESIS_EXPORT,
    HYPOTHESIS_FIELDS,
    HYPOTHESIS_MODEL_FIELDS,
)
from provenance.checks.models import Check, Hypothesis


def test_the_api_answers_exactly_the_hypothesis_fields_in_order():
    assert list(HypothesisOutput().fields) == list(HYPOTHESIS_FIELDS)


def test_the_admin_inline_shows_every_hypothesis_field_by_its_model_name():
    (inline,) = [i for i in CheckAdmin(Check, admin.site).inlines if i.model is Hypothesis]
    assert tuple(inline.fields) == HYPOTHESIS_MODEL_FIELDS == tuple(inline.readonly_fields)
    assert {"key", "tokenizer"} <= set(HYPOTHESIS_MODEL_FIELDS)


def test_the_scorer_writes_every_concrete_column_of_a_hypothesis_but_its_id():
    concrete = {f.name for f in Hypothesis._meta.concrete_fields} - {"id"}
    assert set(HYPOTHESIS_COLUMNS) == concrete and len(HYPOTHESIS_COLUMNS) == len(concrete)


def test_the_csv_names_each_hypothesis_field_once_without_clashing_with_the_check_row():
    assert list(HYPOTHESIS_EXPORT.values()) == list(HYPOTHESIS_FIELDS)
    assert not set(HYPOTHESIS_EXPORT) & set(EXPORT_FIELDS)
    # the column names clients read since exports began
    for column in ["hypothesis", "key_name", "tokenizer_name", "adjusted_log10_p"]:
        assert column in HYPOTHESIS_EXPORT
    for column in ["hypothesis_p_value", "hypothesis_log10_p", "hypothesis_decided_by"]:
        assert column in HYPOTHESIS_EXPORT
    assert HYPOTHESIS_EXPORT["hypothesis_num_scored_tokens"] == "num_scored_tokens"


def test_every_export_field_is_a_check_column_or_derived_from_one():
    derived = {"check_id", "key_fpr_above_threshold", "num_spans"}
    derived |= {"longest_span_start_char", "longest_span_end_char"}
    columns = {f.name for f in Check._meta.concrete_fields}
    assert set(EXPORT_FIELDS) - derived <= columns
    assert len(set(EXPORT_FIELDS)) == len(EXPORT_FIELDS)
