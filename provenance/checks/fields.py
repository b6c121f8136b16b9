"""The fields of a hypothesis and of a check's export row, named once: the API's serializer,
the admin, the rows the scorer writes and the CSV columns are derived from these lists."""

from __future__ import annotations

# A hypothesis (one key x tokenizer test of a check's text) as the API answers it, in order;
# key_id and tokenizer_id are the foreign keys' ids.
HYPOTHESIS_FIELDS = (
    "index",
    "key_id",
    "key_name",
    "tokenizer_id",
    "tokenizer_name",
    "algorithm",
    "score",
    "num_tokens",
    "num_scored_tokens",
    "p_value",
    "log10_p",
    "adjusted_log10_p",
    "decision_log10_p",
    "weighted_log10_p",
    "weighted_suspected",
    "decided_by",
)
# The same by model field name (the foreign keys as themselves): what the admin shows.
HYPOTHESIS_MODEL_FIELDS = tuple(name.removesuffix("_id") for name in HYPOTHESIS_FIELDS)
# What the scorer writes per hypothesis: its check, the shown fields, and the content hash of
# the n-gram table that applied (named by the signed report, not shown).
HYPOTHESIS_COLUMNS = ("check_run", *HYPOTHESIS_MODEL_FIELDS, "ngram_table", "reading_reserved")

# One row per check in an export (a check's CSV, an audit's CSV and JSON), in order.
EXPORT_FIELDS = (
    "check_id",
    "filename",
    "client_id",
    "status",
    "is_watermarked",
    "verdict",
    "verdict_reason",
    "verdict_tokens_needed",
    "p_value",
    "log10_p",
    "decided_by",
    "reading",
    "num_hypotheses",
    "num_tokens",
    "num_scored_tokens",
    "best_key",
    "threshold",
    "key_fpr_above_threshold",
    "created_at",
    "finished_at",
    "num_spans",
    "longest_span_start_char",
    "longest_span_end_char",
    "failure_reason",
)
# A check's CSV adds one row per hypothesis: the hypothesis's fields, "hypothesis" for its
# index and prefixed "hypothesis_" where the check's row has the same name (CSV column: field).
HYPOTHESIS_EXPORT = {
    (
        "hypothesis" if name == "index" else f"hypothesis_{name}" if name in EXPORT_FIELDS else name
    ): (name)
    for name in HYPOTHESIS_FIELDS
}
