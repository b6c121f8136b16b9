"""The checks resource: submit a text or a document (``POST /api/v1/checks``), list the team's
checks, read or delete one. One APIView per use case; views parse, call one service, render.
Every read goes through a team-scoped selector."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import QuerySet
from django.urls import reverse
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    extend_schema_serializer,
)
from rest_framework import serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response

from provenance.accounts.auth import AuthenticatedRequest
from provenance.checks import selectors, services
from provenance.checks.api.base import (
    DETECT_THROTTLES,
    FINISHED,
    KeyIdsField,
    OutputOnce,
    TextField,
    TieredApi,
    body_size_guard,
    read_upload,
    wait_seconds,
    waiting_slot,
)
from provenance.checks.fields import HYPOTHESIS_FIELDS
from provenance.checks.filters import CheckFilter
from provenance.checks.models import Check, Hypothesis, Reading, Status, Surface
from provenance.checks.services.deletion import check_delete


class HypothesisOutput(OutputOnce):
    class Meta:
        model = Hypothesis
        fields = list(HYPOTHESIS_FIELDS)


@extend_schema_serializer(component_name="ContentCredentials")
class ContentCredentialsOutput(serializers.Serializer):
    """What the text's C2PA Content Credentials say (docs/c2pa.md)."""

    present = serializers.BooleanField(help_text="the text carries a C2PA text wrapper")
    valid = serializers.BooleanField(
        help_text="signature, assertions and the hard binding over this text all check"
    )
    trusted = serializers.BooleanField(
        allow_null=True, help_text="the signer chains to a trust anchor; null: not evaluated"
    )
    signer = serializers.CharField(allow_null=True)
    issuer = serializers.CharField(allow_null=True)
    claim_generator = serializers.CharField(allow_null=True)
    created = serializers.CharField(allow_null=True)
    model = serializers.CharField(allow_null=True)
    organization = serializers.CharField(allow_null=True)
    manifest_id = serializers.CharField(allow_null=True)
    soft_binding = serializers.DictField(child=serializers.CharField(), allow_null=True)
    digital_source_type = serializers.CharField(allow_null=True)
    reasons = serializers.ListField(child=serializers.CharField())


class CheckSummaryOutput(OutputOnce):
    best_key = serializers.CharField(source="best_key.name", default=None, read_only=True)
    content_credentials = ContentCredentialsOutput(
        read_only=True,
        allow_null=True,
        help_text="the text's Content Credentials; null until scored (or scored before they "
        "were read)",
    )
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
            "failure_code",
            "is_watermarked",
            "verdict",
            "verdict_reason",
            "verdict_tokens_needed",
            "p_value",
            "log10_p",
            "decided_by",
            "reading",
            "content_credentials",
            "correction",
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


# One list serializer renders every check's spans: its fields are built once and only read.
_SPANS: serializers.ListSerializer[Any] = serializers.ListSerializer(child=SpanOutput())


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
        return list(_SPANS.to_representation(check.spans or []))  # null until scored

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
class CheckListCreateApi(TieredApi, GenericAPIView):
    """Submit a text or a document; list the team's checks, filtered by the history's
    filters (``provenance.checks.filters``, the ``/checks/`` page's too) and paginated."""

    throttle_classes = DETECT_THROTTLES
    filter_backends = [DjangoFilterBackend]
    filterset_class = CheckFilter
    pagination_class = LimitOffsetPagination

    def get_serializer_class(self) -> type[serializers.Serializer]:
        return self.InputSerializer  # what OPTIONS describes: the submission's fields

    def get_queryset(self) -> QuerySet[Check]:
        return selectors.checks_for_user(self.request.user)  # type: ignore[arg-type]  # signed in

    @extend_schema_serializer(component_name="CheckInput")
    class InputSerializer(serializers.Serializer):
        text = TextField(required=False)
        file = serializers.FileField(
            required=False,
            help_text="instead of text (multipart): a .txt, .md, .html, .docx or .pdf file",
        )
        key_ids = KeyIdsField()

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
                "Texts up to PROVENANCE_INLINE_MAX_BYTES (16 KiB) are scored in the request. "
                "A document is read by a worker: one it refuses is answered 400 or 413 "
                "(code document_...) when the refusal came in time, else its check fails "
                "with that failure_code.",
            )
        ],
    )
    def post(self, request: AuthenticatedRequest) -> Response:
        body_size_guard(request)
        wait = wait_seconds(request)
        data = self._input(request)
        if "file" in data:  # staged: a worker reads it, then scores its text
            check = services.check_document_create(
                user=request.user,
                filename=data["file"].name or "",
                content=read_upload(data["file"]),
                key_ids=data.get("key_ids"),
                surface=Surface.API,
            )
        else:
            check = services.check_create(
                user=request.user,
                text=data.get("text"),
                key_ids=data.get("key_ids"),
                inline=wait > 0,
                surface=Surface.API,
            )
        if check.status not in FINISHED:  # queued: wait for the worker in one of the user's slots
            with waiting_slot(request.user, wait) as granted:
                if granted > 0:
                    selectors.check_finished(check.id, within=granted)
            check = selectors.check_get(request.user, check.id)  # what the worker wrote
        # else scored in this request (no waiting slot taken: scoring is bounded by the
        # inline size): answered from what was written, not read back.
        if check.status == Status.FAILED and check.failure_code:  # a document the worker refused
            raise services.refusal_problem(check.failure_code, check.failure_reason)
        location = reverse("api-check-detail", args=[check.id])
        body = CheckDetailOutput(check).data
        code = status.HTTP_201_CREATED if body["status"] in FINISHED else status.HTTP_202_ACCEPTED
        return Response(body, status=code, headers={"Location": location})

    def _input(self, request: Request) -> dict[str, Any]:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    @extend_schema(
        responses=CheckSummaryOutput(many=True),
        description="The team's single checks, newest first; the filters combine (and).",
    )
    def get(self, request: AuthenticatedRequest) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(CheckSummaryOutput(page, many=True).data)


class CheckDetailApi(TieredApi):
    @extend_schema(
        responses=CheckTokensOutput,
        parameters=[
            OpenApiParameter(
                "tokens", bool, description="1: add the per-token data (heatmap); large"
            ),
            OpenApiParameter(
                "wait",
                float,
                description="seconds (at most PROVENANCE_MAX_WAIT) to wait for the final "
                "answer: the check done or failed and its reading not pending; answered as "
                "it stands when the time is up",
            ),
        ],
    )
    def get(self, request: AuthenticatedRequest, check_id: uuid.UUID) -> Response:
        check = selectors.check_get(request.user, check_id)
        wait = wait_seconds(request)
        if wait > 0 and (check.status not in FINISHED or check.reading == Reading.PENDING):
            with waiting_slot(request.user, wait) as granted:
                if granted > 0:
                    selectors.check_finished(check.id, within=granted, final=True)
            check = selectors.check_get(request.user, check.id)
        if request.query_params.get("tokens") in ("1", "true"):
            return Response(CheckTokensOutput(check).data)
        return Response(CheckDetailOutput(check).data)

    @extend_schema(responses={204: None})
    def delete(self, request: AuthenticatedRequest, check_id: uuid.UUID) -> Response:
        check_delete(user=request.user, check_id=check_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
