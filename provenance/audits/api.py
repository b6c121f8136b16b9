"""The audits resource: submit a batch of texts or a zip archive (``POST /api/v1/audits``,
idempotent by ``Idempotency-Key``), list the team's audits, read or delete one, page through
its items, export its results (CSV or JSON, streamed: audits reach 10,000 rows); items and
exports take the audit page's filter and order (``?verdict=``, ``?sort=``)."""

from __future__ import annotations

import csv
import json
import uuid
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.http import StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    extend_schema_serializer,
)
from rest_framework import serializers, status
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.response import Response

from provenance.accounts.auth import AuthenticatedRequest
from provenance.audits import extraction, selectors, services
from provenance.audits.models import Audit
from provenance.audits.services import audit_delete
from provenance.checks import tiers
from provenance.checks.api.base import (
    DETECT_THROTTLES,
    CappedListField,
    KeyIdsField,
    TieredApi,
    body_size_guard,
    read_upload,
)
from provenance.checks.api.checks import CheckSummaryOutput
from provenance.checks.exports import csv_safe
from provenance.checks.fields import EXPORT_FIELDS
from provenance.keys.selectors import exact_for


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
            "failure_code",
            "failure_reason",
            "counts",
            "notice",
        ]

    @extend_schema_field(AuditCountsOutput)
    def get_counts(self, audit: Audit) -> dict[str, int]:
        return selectors.audit_counts(audit)


# An audit item's fields: the allowlist of each item (provenance.api_input refuses any other,
# naming it ``texts[i].name``). The item is checked by the service, one message naming its
# index (``services.audit_texts_validate``), so it passes through here as sent. (A comment,
# not a docstring: the API schema shows the docstring.)
@extend_schema_serializer(component_name="AuditTextInput")
class AuditTextInput(serializers.Serializer):
    """One text of an audit: these two fields, no other."""

    client_id = serializers.CharField(
        required=False, allow_blank=True, max_length=200, help_text="your name for the text"
    )
    text = serializers.CharField(allow_blank=True, trim_whitespace=False)

    def run_validation(self, data: Any = serializers.empty) -> Any:
        return data


class AuditListCreateApi(TieredApi):
    throttle_classes = DETECT_THROTTLES

    @extend_schema_serializer(component_name="AuditInput")
    class InputSerializer(serializers.Serializer):
        # Items are checked by the service (one clear message naming the bad index).
        texts = CappedListField(
            limit=lambda: settings.PROVENANCE_MAX_AUDIT_TEXTS,
            message="an audit holds at most {limit} texts; got {got}",
            child=AuditTextInput(),
            allow_empty=False,
            required=False,
            help_text='[{"client_id": "doc-1", "text": "..."}, ...], at most 10,000',
        )
        archive = serializers.FileField(
            required=False,
            help_text="instead of texts (multipart): a zip of .txt, .md, .html, .docx and .pdf "
            "files; each file's name (its path in the zip) becomes its client_id. A worker "
            "reads it: the audit has no texts until then, and a zip it refuses fails the "
            "audit with failure_code (document_...) and failure_reason",
        )
        key_ids = KeyIdsField()
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
        body_size_guard(request)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        request_options: dict[str, Any] = {
            "user": request.user,
            "key_ids": data.get("key_ids"),
            "idempotency_key": request.headers.get("Idempotency-Key", "").strip(),
            "callback_url": data.get("callback_url", ""),
        }
        if "archive" in data:  # staged: a worker reads the zip, then its texts are scored
            files = [("archive", read_upload(data["archive"]))]
            audit, created = extraction.audit_upload_submit(
                files=files, archive=True, **request_options
            )
        else:
            audit, created = services.audit_submit(texts=data.get("texts"), **request_options)
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
        audit_delete(user=request.user, audit_id=audit_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


# The filter and order of an audit's items and exports, as on the audit's page.
RESULTS_PARAMETERS = [
    OpenApiParameter(
        "verdict",
        str,
        enum=list(selectors.VERDICT_FILTERS),
        description="only the texts with this verdict (failed, open: by status)",
    ),
    OpenApiParameter(
        "sort",
        str,
        enum=[f"{sign}{name}" for name in selectors.SORTS for sign in ("", "-")],
        description="order (default: position, the submission order); - first reverses it",
    ),
]


class AuditItemsApi(TieredApi):
    @extend_schema(responses=CheckSummaryOutput(many=True), parameters=RESULTS_PARAMETERS)
    def get(self, request: AuthenticatedRequest, audit_id: uuid.UUID) -> Response:
        audit = selectors.audit_get(request.user, audit_id)
        verdict, sort = selectors.results_query(request.query_params, strict=True)
        items = selectors.audit_items(audit, verdict, sort)
        paginator = LimitOffsetPagination()
        page = paginator.paginate_queryset(items, request, self)
        return paginator.get_paginated_response(CheckSummaryOutput(page, many=True).data)


class _Echo:
    def write(self, value: str) -> str:
        return value


def _csv_lines(rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    writer = csv.DictWriter(_Echo(), fieldnames=EXPORT_FIELDS)
    yield writer.writeheader()
    for row in rows:
        yield writer.writerow(csv_safe(row))


def _json_chunks(audit: Audit, rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    yield json.dumps({"audit": str(audit.id), "status": audit.status})[:-1] + ', "results": ['
    for i, row in enumerate(rows):
        yield ("," if i else "") + json.dumps(row)
    yield "]}"


class AuditExportApi(TieredApi):
    @extend_schema(
        responses={(200, "text/csv"): str, (200, "application/json"): dict},
        parameters=RESULTS_PARAMETERS,
    )
    def get(self, request: AuthenticatedRequest, audit_id: str, fmt: str) -> StreamingHttpResponse:
        audit = selectors.audit_get(request.user, audit_id)
        verdict, sort = selectors.results_query(request.query_params, strict=True)
        rows = selectors.audit_export_rows(audit, verdict, sort)
        if not exact_for(request.user, audit.key_ids):
            rows = (tiers.redact(row) for row in rows)
        if fmt == "csv":
            response = StreamingHttpResponse(_csv_lines(rows), content_type="text/csv")
        else:
            response = StreamingHttpResponse(
                _json_chunks(audit, rows), content_type="application/json"
            )
        response["Content-Disposition"] = f'attachment; filename="audit-{audit.id}.{fmt}"'
        return response
