"""REST API for checks, audits and the vLLM-compatible /detect route.

One APIView per use case, nested Input/Output serializers; views parse, call one service,
render. Every read goes through a team-scoped selector.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.http import HttpResponse, StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    extend_schema_serializer,
)
from rest_framework import serializers, status
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.encoders import JSONEncoder
from rest_framework.validators import ProhibitSurrogateCharactersValidator
from rest_framework.views import APIView

from detector.decision.decide import gamma_summary
from provenance.accounts.selectors import is_auditor, teams_memoized
from provenance.auth import AuthenticatedRequest
from provenance.checks import selectors, services, tiers
from provenance.checks.models import Audit, Check, Hypothesis, Status, Verdict
from provenance.errors import PayloadTooLarge
from provenance.throttling import UserAndDetectionThrottle


class TieredApi(APIView):
    """Answers of a basic-tier team go through ``tiers.redact`` (see provenance.checks.tiers).
    The caller's team is read once per request (each query costs about as much CPU as
    scoring a short text)."""

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        with teams_memoized():
            return super().dispatch(request, *args, **kwargs)

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(response, Response) and response.status_code < 400:
            if not is_auditor(request.user):
                response.data = tiers.redact(response.data)
        return super().finalize_response(request, response, *args, **kwargs)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_surrogates(value: str) -> None:
    found = _SURROGATE.search(value)
    if found is not None:
        raise serializers.ValidationError(
            ProhibitSurrogateCharactersValidator.message.format(code_point=ord(found.group())),
            code=ProhibitSurrogateCharactersValidator.code,
        )


class TextField(serializers.CharField):
    """A text to check: must arrive as a JSON string (DRF would turn 5 into "5")."""

    def __init__(self, **kwargs: Any):
        super().__init__(allow_blank=True, trim_whitespace=False, **kwargs)
        # DRF's surrogate check walks the text in Python, a generator step per character; the
        # same check, message and code in one regular-expression search.
        self.validators = [
            _no_surrogates if isinstance(v, ProhibitSurrogateCharactersValidator) else v
            for v in self.validators
        ]

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)

    default_error_messages = {"invalid": "text must be a string."}


class FieldsOnce(serializers.ModelSerializer):
    """A ModelSerializer that builds its fields from the model once per class, then gives
    each instance fresh ones made with the same arguments (what DRF's ``deepcopy`` of a
    declared field does, without copying arguments that no field changes): building them
    from the model, then deep-copying them, cost about a third of an inline check's request
    CPU. Only for serializers whose fields depend on nothing but their class."""

    _fields_once: dict[str, serializers.Field] | None = None  # read from each class's own

    def get_fields(self) -> dict[str, serializers.Field]:
        built = type(self).__dict__.get("_fields_once")
        if built is None:
            built = super().get_fields()  # never bound: only the fresh ones are
            type(self)._fields_once = built
        return {name: _fresh(field) for name, field in built.items()}


def _fresh(field: serializers.Field) -> serializers.Field:
    if isinstance(field, serializers.BaseSerializer):  # nested: its own fields are made anew
        return copy.deepcopy(field)
    return type(field)(*field._args, **field._kwargs)  # type: ignore[attr-defined]


class HypothesisOutput(FieldsOnce):
    class Meta:
        model = Hypothesis
        fields = [
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
        ]


class CheckSummaryOutput(FieldsOnce):
    best_key = serializers.CharField(source="best_key.name", default=None, read_only=True)
    notice = serializers.SerializerMethodField(
        help_text="Set while the check waits for the scoring queue (broker down)."
    )

    def get_notice(self, check: Check) -> str:
        return selectors.queue_notice(check)

    class Meta:
        model = Check
        fields = [
            "id",
            "client_id",
            "filename",
            "status",
            "failure_reason",
            "is_watermarked",
            "verdict",
            "verdict_reason",
            "verdict_tokens_needed",
            "p_value",
            "log10_p",
            "decided_by",
            "num_hypotheses",
            "num_tokens",
            "num_scored_tokens",
            "best_key",
            "created_at",
            "queued_at",
            "started_at",
            "finished_at",
            "scoring_ms",
            "notice",
        ]


class SpanOutput(serializers.Serializer):
    """A stretch of the text that carries one key's watermark (``detector.evidence.localize``)."""

    start_token = serializers.IntegerField()
    end_token = serializers.IntegerField(help_text="exclusive")
    start_char = serializers.IntegerField()
    end_char = serializers.IntegerField(help_text="exclusive")
    num_scored_tokens = serializers.IntegerField()
    p_value = serializers.FloatField(help_text="adjusted for the scan and every hypothesis")
    log10_p = serializers.FloatField()
    key_id = serializers.UUIDField()


class CheckDetailOutput(CheckSummaryOutput):
    hypotheses = HypothesisOutput(many=True, read_only=True)
    key_measured_fpr = serializers.JSONField(
        read_only=True,
        allow_null=True,
        help_text="The best key's measured false-positive rate per genre of human text (its "
        "latest calibration when the check was scored: rate, 95% interval, texts), or null "
        "when it was not calibrated then.",
    )

    spans = serializers.SerializerMethodField(help_text="Where the watermark is (if anywhere).")

    @extend_schema_field(SpanOutput(many=True))
    def get_spans(self, check: Check) -> list[dict[str, Any]]:
        return list(SpanOutput(check.spans or [], many=True).data)  # null until scored

    purged_at = serializers.DateTimeField(
        read_only=True,
        help_text="When the text and per-token data were removed (retention period over).",
    )

    class Meta(CheckSummaryOutput.Meta):
        fields = [
            *CheckSummaryOutput.Meta.fields,
            "audit_id",
            "text",
            "text_sha256",
            "purged_at",
            "hypotheses",
            "spans",
            "key_measured_fpr",
        ]


class CheckTokensOutput(CheckDetailOutput):
    """The detail plus the per-token data (``?tokens=1``): about 35 bytes a token."""

    heatmap = serializers.JSONField(
        source="token_data",
        read_only=True,
        help_text="offsets [[start, end], ...], scores, scored mask, context_width, chart.",
    )

    class Meta(CheckDetailOutput.Meta):
        fields = [*CheckDetailOutput.Meta.fields, "heatmap"]


# The general and the detection rate in one atomic Redis round trip (provenance.throttling).
DETECT_THROTTLES = [UserAndDetectionThrottle]


def _body_size_guard(request: Request) -> None:
    # DRF parses the stream itself, bypassing Django's upload limit: enforce it here.
    length = int(request.META.get("CONTENT_LENGTH") or 0)
    if length > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        raise PayloadTooLarge(
            f"request body is {length} bytes; the limit is {settings.DATA_UPLOAD_MAX_MEMORY_SIZE}"
        )


FINISHED = (Status.DONE, Status.FAILED)


def _wait_seconds(request: Request) -> float:
    """The ``?wait=`` of a submission: 0 (answer at once) unless asked for."""
    raw = request.query_params.get("wait", "0")
    try:
        wait = float(raw)
    except ValueError:
        wait = -1.0
    if not 0 <= wait <= settings.PROVENANCE_MAX_WAIT:  # also refuses nan
        raise serializers.ValidationError(
            {"wait": [f"wait must be a number of seconds from 0 to {settings.PROVENANCE_MAX_WAIT}"]}
        )
    return wait


def _read_upload(upload: Any) -> bytes:
    """An uploaded file's bytes, refused before reading when larger than any document or
    archive may be (the body guard bounds it too)."""
    limit = max(settings.PROVENANCE_MAX_DOCUMENT_BYTES, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
    if upload.size is not None and upload.size > limit:
        raise PayloadTooLarge(f"the file is {upload.size} bytes; the limit is {limit}")
    return bytes(upload.read())


class CheckListCreateApi(TieredApi):
    throttle_classes = DETECT_THROTTLES

    @extend_schema_serializer(component_name="CheckInput")
    class InputSerializer(serializers.Serializer):
        text = TextField(required=False)
        file = serializers.FileField(
            required=False,
            help_text="instead of text (multipart): a .txt, .md, .html, .docx or .pdf file",
        )
        key_ids = serializers.ListField(
            child=serializers.UUIDField(), required=False, allow_empty=False
        )

        def validate(self, data: dict[str, Any]) -> dict[str, Any]:
            if ("text" in data) == ("file" in data):
                raise serializers.ValidationError("send exactly one of text and file")
            return data

    @extend_schema(
        request={
            "application/json": InputSerializer,
            "multipart/form-data": InputSerializer,
        },
        responses={201: CheckDetailOutput, 202: CheckDetailOutput},
        parameters=[
            OpenApiParameter(
                "wait",
                float,
                description="seconds to wait for the verdict (at most PROVENANCE_MAX_WAIT, 30 by "
                "default): 201 with the finished check when it came in time, else 202. "
                "Texts up to PROVENANCE_INLINE_MAX_BYTES (16 KiB) are scored in the request.",
            )
        ],
    )
    def post(self, request: AuthenticatedRequest) -> Response:
        _body_size_guard(request)
        wait = _wait_seconds(request)
        data = self._input(request)
        text, filename = data.get("text"), ""
        if "file" in data:
            document = services.document_extract(data["file"].name, _read_upload(data["file"]))
            text, filename = document.text, document.filename
        check = services.check_create(
            user=request.user,
            text=text,
            key_ids=data.get("key_ids"),
            filename=filename,
            inline=wait > 0,
        )
        if check.status not in FINISHED:  # queued: read what the worker wrote meanwhile
            if wait > 0:
                selectors.check_finished(check.id, within=wait)
            check = selectors.check_get(request.user, check.id)
        # else scored in this request: answered from what was written, not read back.
        location = reverse("api-check-detail", args=[check.id])
        body = CheckDetailOutput(check).data
        code = status.HTTP_201_CREATED if body["status"] in FINISHED else status.HTTP_202_ACCEPTED
        return Response(body, status=code, headers={"Location": location})

    def _input(self, request: Request) -> dict[str, Any]:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    @extend_schema(responses=CheckSummaryOutput(many=True))
    def get(self, request: AuthenticatedRequest) -> Response:
        paginator = LimitOffsetPagination()
        page = paginator.paginate_queryset(selectors.checks_for_user(request.user), request, self)
        return paginator.get_paginated_response(CheckSummaryOutput(page, many=True).data)


class CheckDetailApi(TieredApi):
    @extend_schema(
        responses=CheckTokensOutput,
        parameters=[
            OpenApiParameter(
                "tokens", bool, description="1: add the per-token data (heatmap); large"
            )
        ],
    )
    def get(self, request: AuthenticatedRequest, check_id: uuid.UUID) -> Response:
        check = selectors.check_get(request.user, check_id)
        if request.query_params.get("tokens") in ("1", "true"):
            return Response(CheckTokensOutput(check).data)
        return Response(CheckDetailOutput(check).data)

    @extend_schema(responses={204: None})
    def delete(self, request: AuthenticatedRequest, check_id: uuid.UUID) -> Response:
        services.check_delete(user=request.user, check_id=check_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


CHECK_EXPORT_FIELDS = [
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
]
HYPOTHESIS_EXPORT_FIELDS = [
    "hypothesis",
    "key_id",
    "key_name",
    "tokenizer_name",
    "algorithm",
    "score",
    "hypothesis_num_scored_tokens",
    "hypothesis_p_value",
    "hypothesis_log10_p",
    "adjusted_log10_p",
    "decision_log10_p",
    "weighted_log10_p",
    "weighted_suspected",
    "hypothesis_decided_by",
]


def _check_csv_rows(check: Check, auditor: bool = True) -> Iterator[dict[str, Any]]:
    """One row per hypothesis (the check's fields repeated); one row when none was tested."""
    summary = CheckDetailOutput(check).data
    if not auditor:
        summary = tiers.redact(summary)
    base = {field: summary.get(field) for field in CHECK_EXPORT_FIELDS if field != "check_id"}
    base["check_id"] = summary["id"]
    base["key_fpr_above_threshold"] = selectors.key_fpr_above_threshold(check)
    base.update(selectors.longest_span(check.spans or []))
    for h in summary["hypotheses"] or [{}]:
        yield {
            **base,
            "hypothesis": h.get("index"),
            "key_id": h.get("key_id"),
            "key_name": h.get("key_name"),
            "tokenizer_name": h.get("tokenizer_name"),
            "algorithm": h.get("algorithm"),
            "score": h.get("score"),
            "hypothesis_num_scored_tokens": h.get("num_scored_tokens"),
            "hypothesis_p_value": h.get("p_value"),
            "hypothesis_log10_p": h.get("log10_p"),
            "adjusted_log10_p": h.get("adjusted_log10_p"),
            "decision_log10_p": h.get("decision_log10_p"),
            "weighted_log10_p": h.get("weighted_log10_p"),
            "weighted_suspected": h.get("weighted_suspected"),
            "hypothesis_decided_by": h.get("decided_by"),
        }


class CheckExportApi(TieredApi):
    """One check as a file: JSON (the detail answer, hypotheses included) or CSV (one row per
    hypothesis). Pages link here; the session authenticates them."""

    @extend_schema(responses={(200, "text/csv"): str, (200, "application/json"): dict})
    def get(self, request: AuthenticatedRequest, check_id: str, fmt: str) -> HttpResponse:
        check = selectors.check_get(request.user, check_id)
        auditor = is_auditor(request.user)
        if fmt == "json":
            data = CheckDetailOutput(check).data
            data = data if auditor else tiers.redact(data)
            body = json.dumps(data, cls=JSONEncoder, ensure_ascii=False, indent=2)
            response = HttpResponse(body, content_type="application/json; charset=utf-8")
        else:
            out = io.StringIO()
            writer = csv.DictWriter(out, fieldnames=CHECK_EXPORT_FIELDS + HYPOTHESIS_EXPORT_FIELDS)
            writer.writeheader()
            writer.writerows(_check_csv_rows(check, auditor))
            response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="check-{check.id}.{fmt}"'
        return response


class AuditCountsOutput(serializers.Serializer):
    """An audit's texts by status, and the finished ones by three-way verdict."""

    done = serializers.IntegerField()
    failed = serializers.IntegerField()
    open = serializers.IntegerField(help_text="pending or running")
    watermarked = serializers.IntegerField()
    not_watermarked = serializers.IntegerField(
        help_text="a watermarked text of this length and kind would have been detected"
    )
    inconclusive = serializers.IntegerField(help_text="too little could be scored to tell")


class AuditOutput(serializers.ModelSerializer):
    counts = serializers.SerializerMethodField()
    notice = serializers.SerializerMethodField(
        help_text="Set while checks of the audit wait for the scoring queue (broker down)."
    )

    def get_notice(self, audit: Audit) -> str:
        return selectors.audit_queue_notice(audit)

    class Meta:
        model = Audit
        fields = [
            "id",
            "status",
            "num_texts",
            "key_ids",
            "threshold",
            "idempotency_key",
            "callback_url",
            "created_at",
            "finished_at",
            "counts",
            "notice",
        ]

    @extend_schema_field(AuditCountsOutput)
    def get_counts(self, audit: Audit) -> dict[str, int]:
        return selectors.audit_counts(audit)


class AuditListCreateApi(TieredApi):
    throttle_classes = DETECT_THROTTLES

    @extend_schema_serializer(component_name="AuditInput")
    class InputSerializer(serializers.Serializer):
        # Items are checked by the service (one clear message naming the bad index).
        texts = serializers.ListField(
            child=serializers.DictField(),
            allow_empty=False,
            required=False,
            help_text='[{"client_id": "doc-1", "text": "..."}, ...], at most 10,000',
        )
        archive = serializers.FileField(
            required=False,
            help_text="instead of texts (multipart): a zip of .txt, .md, .html, .docx and .pdf "
            "files; each file's name (its path in the zip) becomes its client_id",
        )
        key_ids = serializers.ListField(
            child=serializers.UUIDField(), required=False, allow_empty=False
        )
        callback_url = serializers.CharField(
            required=False,
            allow_blank=True,
            max_length=500,
            help_text="POSTed the audit's summary when it finishes, signed with the team's "
            "webhook secret (default: the team's callback URL)",
        )

        def validate(self, data: dict[str, Any]) -> dict[str, Any]:
            if ("texts" in data) == ("archive" in data):
                raise serializers.ValidationError("send exactly one of texts and archive")
            return data

    @extend_schema(
        request={
            "application/json": InputSerializer,
            "multipart/form-data": InputSerializer,
        },
        responses={202: AuditOutput, 200: AuditOutput},
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER)],
    )
    def post(self, request: AuthenticatedRequest) -> Response:
        _body_size_guard(request)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        texts = data.get("texts")
        if "archive" in data:
            texts = services.archive_texts(_read_upload(data["archive"]))
        audit, created = services.audit_submit(
            user=request.user,
            texts=texts,
            key_ids=data.get("key_ids"),
            idempotency_key=request.headers.get("Idempotency-Key", "").strip(),
            callback_url=data.get("callback_url", ""),
        )
        code = status.HTTP_202_ACCEPTED if created else status.HTTP_200_OK
        location = reverse("api-audit-detail", args=[audit.id])
        return Response(AuditOutput(audit).data, status=code, headers={"Location": location})

    @extend_schema(responses=AuditOutput(many=True))
    def get(self, request: AuthenticatedRequest) -> Response:
        paginator = LimitOffsetPagination()
        page = paginator.paginate_queryset(selectors.audits_for_user(request.user), request, self)
        return paginator.get_paginated_response(AuditOutput(page, many=True).data)


class AuditDetailApi(TieredApi):
    @extend_schema(responses=AuditOutput)
    def get(self, request: AuthenticatedRequest, audit_id: uuid.UUID) -> Response:
        return Response(AuditOutput(selectors.audit_get(request.user, audit_id)).data)

    @extend_schema(responses={204: None})
    def delete(self, request: AuthenticatedRequest, audit_id: uuid.UUID) -> Response:
        services.audit_delete(user=request.user, audit_id=audit_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class AuditItemsApi(TieredApi):
    @extend_schema(responses=CheckSummaryOutput(many=True))
    def get(self, request: AuthenticatedRequest, audit_id: uuid.UUID) -> Response:
        audit = selectors.audit_get(request.user, audit_id)
        paginator = LimitOffsetPagination()
        page = paginator.paginate_queryset(selectors.audit_items(audit), request, self)
        return paginator.get_paginated_response(CheckSummaryOutput(page, many=True).data)


class _Echo:
    def write(self, value: str) -> str:
        return value


def _csv_lines(rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    writer = csv.DictWriter(_Echo(), fieldnames=selectors.EXPORT_FIELDS)
    yield writer.writeheader()
    for row in rows:
        yield writer.writerow(row)


def _json_chunks(audit: Audit, rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    yield json.dumps({"audit": str(audit.id), "status": audit.status})[:-1] + ', "results": ['
    for i, row in enumerate(rows):
        yield ("," if i else "") + json.dumps(row)
    yield "]}"


class AuditExportApi(TieredApi):
    @extend_schema(responses={(200, "text/csv"): str, (200, "application/json"): dict})
    def get(self, request: AuthenticatedRequest, audit_id: str, fmt: str) -> StreamingHttpResponse:
        audit = selectors.audit_get(request.user, audit_id)
        rows = selectors.audit_export_rows(audit)
        if not is_auditor(request.user):
            rows = (tiers.redact(row) for row in rows)
        if fmt == "csv":
            response = StreamingHttpResponse(_csv_lines(rows), content_type="text/csv")
        else:
            response = StreamingHttpResponse(
                _json_chunks(audit, rows), content_type="application/json"
            )
        response["Content-Disposition"] = f'attachment; filename="audit-{audit.id}.{fmt}"'
        return response


class DetectApi(TieredApi):
    """Drop-in for vLLM's example detection server: same request, same fields, plus ours."""

    throttle_classes = DETECT_THROTTLES

    @extend_schema_serializer(component_name="DetectInput")
    class InputSerializer(serializers.Serializer):
        text = TextField()

    @extend_schema_serializer(component_name="DetectOutput")
    class OutputSerializer(serializers.Serializer):
        score = serializers.FloatField()
        p_value = serializers.FloatField()
        num_scored_tokens = serializers.IntegerField()
        is_watermarked = serializers.BooleanField()
        verdict = serializers.ChoiceField(choices=Verdict.choices)
        verdict_reason = serializers.CharField()
        verdict_tokens_needed = serializers.IntegerField(
            allow_null=True,
            help_text="scored tokens a watermarked text of this kind needs for 80% power",
        )
        log10_p = serializers.FloatField()
        num_tokens = serializers.IntegerField()
        num_hypotheses = serializers.IntegerField()
        key = serializers.CharField(allow_null=True)
        tokenizer = serializers.CharField(allow_null=True)
        hypotheses = serializers.ListField(child=serializers.DictField())
        spans = SpanOutput(many=True)
        key_measured_fpr = serializers.JSONField(allow_null=True)
        decided_by = serializers.CharField(
            help_text="the test the verdict rests on: gamma (global test and span scan), "
            "weighted (the model-assisted test); empty without keys"
        )
        gamma = serializers.DictField(
            allow_null=True,
            help_text="the best hypothesis's plain Gamma test over the whole text, and the "
            "statistic vLLM's detector computes (vllm_*), for comparison with vLLM",
        )

    @extend_schema(request=InputSerializer, responses=OutputSerializer)
    def post(self, request: AuthenticatedRequest) -> Response:
        _body_size_guard(request)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        result = services.detect_now(user=request.user, text=serializer.validated_data["text"])
        return Response(self.OutputSerializer(_detect_body(result)).data)


def _detect_body(result: Any) -> dict[str, Any]:
    best = result.hypotheses[result.best] if result.best is not None else None
    return {
        "score": best.detection.score if best else 0.0,
        "p_value": result.p_value,
        "num_scored_tokens": best.detection.num_scored_tokens if best else 0,
        "is_watermarked": result.is_watermarked,
        "verdict": result.verdict,
        "verdict_reason": result.verdict_reason,
        "verdict_tokens_needed": result.tokens_needed,
        "log10_p": result.log10_p,
        "num_tokens": best.detection.num_tokens if best else 0,
        "num_hypotheses": len(result.hypotheses),
        "key": best.key.name if best else None,
        "tokenizer": best.tokenizer.name if best else None,
        "hypotheses": [
            {
                "key_id": str(h.key.id),
                "key_name": h.key.name,
                "tokenizer": h.tokenizer.name,
                "score": h.detection.score,
                "num_scored_tokens": h.detection.num_scored_tokens,
                "p_value": h.detection.p_value,
                "log10_p": h.detection.log10_p,
                "adjusted_log10_p": h.adjusted_log10_p,
            }
            for h in result.hypotheses
        ],
        "spans": list(result.spans),
        "key_measured_fpr": result.key_measured_fpr,
        "decided_by": result.decided_by,
        "gamma": None if best is None else gamma_summary(best.detection),
    }
