"""``POST /api/v1/streams`` {key_ids?} -> the stream; ``POST /api/v1/streams/{id}/append``
{text | token_ids, final?} -> the anytime-valid state after the appended tokens."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from provenance.accounts.auth import AuthenticatedRequest
from provenance.checks.api.base import (
    DETECT_THROTTLES,
    CappedListField,
    KeyIdsField,
    body_size_guard,
)
from provenance.keys.selectors import exact_for
from provenance.streams import services
from provenance.streams.models import Stream


def _key_names(stream: Stream) -> list[str]:
    from provenance.keys.models import WatermarkKey

    names = dict(WatermarkKey.objects.filter(id__in=stream.key_ids).values_list("id", "name"))
    return [names.get(uuid.UUID(k), "") for k in stream.key_ids]


class StateOutput(serializers.Serializer):
    id = serializers.UUIDField()
    num_tokens = serializers.IntegerField()
    num_scored_tokens = serializers.IntegerField()
    is_watermarked = serializers.BooleanField(
        help_text="open: the e-process's running verdict; closed: the detector's decision"
    )
    is_watermarked_anytime = serializers.BooleanField(
        help_text="the e-process reached 1 / threshold (anytime-valid; stays true)"
    )
    verdict = serializers.CharField(required=False, help_text="closed streams: the decision")
    verdict_reason = serializers.CharField(required=False)
    p_value = serializers.FloatField(required=False, help_text="closed streams: the decision's")
    log10_p = serializers.FloatField(required=False)
    decided_by = serializers.CharField(required=False)
    correction = serializers.CharField(
        required=False, help_text="closed streams: the family correction the decision applied"
    )
    spans = serializers.ListField(child=serializers.DictField(), required=False)
    threshold = serializers.FloatField()
    best_key = serializers.CharField(allow_null=True)
    closed = serializers.BooleanField()
    log10_p_anytime = serializers.FloatField(help_text="basic tier: rounded down to an integer")
    log10_e_value = serializers.FloatField(required=False, help_text="auditor tier only")
    keys = serializers.ListField(child=serializers.DictField(), required=False)


class StreamCreateApi(APIView):
    throttle_classes = DETECT_THROTTLES

    @extend_schema_serializer(component_name="StreamInput")
    class InputSerializer(serializers.Serializer):
        key_ids = KeyIdsField()

    @extend_schema(request=InputSerializer, responses={201: StateOutput})
    def post(self, request: AuthenticatedRequest) -> Response:
        body_size_guard(request)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        stream, state = services.stream_create(
            user=request.user, key_ids=serializer.validated_data.get("key_ids")
        )
        body = services.state_body(
            stream, state, _key_names(stream), exact_for(request.user, stream.key_ids)
        )
        return Response(body, status=status.HTTP_201_CREATED)


class StreamAppendApi(APIView):
    throttle_classes = DETECT_THROTTLES

    @extend_schema_serializer(component_name="StreamAppendInput")
    class InputSerializer(serializers.Serializer):
        text = serializers.CharField(
            required=False, allow_blank=True, trim_whitespace=False, help_text="a text delta"
        )
        token_ids = CappedListField(
            limit=lambda: settings.PROVENANCE_STREAM_MAX_TOKENS,
            message="a stream holds at most {limit} tokens",
            child=serializers.IntegerField(min_value=0, max_value=2**32 - 1),
            required=False,
        )
        final = serializers.BooleanField(default=False)

    @extend_schema(request=InputSerializer, responses=StateOutput)
    def post(self, request: AuthenticatedRequest, stream_id: uuid.UUID) -> Response:
        body_size_guard(request)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data: dict[str, Any] = serializer.validated_data
        stream, state = services.stream_append(
            user=request.user,
            stream_id=stream_id,
            text=data.get("text"),
            token_ids=data.get("token_ids"),
            final=data["final"],
        )
        names = _key_names(stream)
        return Response(
            services.state_body(stream, state, names, exact_for(request.user, stream.key_ids))
        )
