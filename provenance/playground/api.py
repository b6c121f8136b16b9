"""The playground's API: one stored reply with its provenance (for scripts and tests)."""

from __future__ import annotations

import uuid

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from provenance.accounts.auth import AuthenticatedRequest
from provenance.accounts.selectors import is_auditor
from provenance.checks import tiers
from provenance.playground import selectors
from provenance.playground.views import PERMISSION


class ReplyDetailApi(APIView):
    class OutputSerializer(serializers.Serializer):
        id = serializers.CharField(source="pk")
        conversation = serializers.CharField(source="conversation_id")
        status = serializers.CharField()
        error = serializers.CharField()
        content = serializers.CharField()
        key_name = serializers.CharField()
        watermarked = serializers.BooleanField(allow_null=True)
        model = serializers.CharField()
        tokenizer_hash = serializers.CharField()
        temperature = serializers.FloatField(allow_null=True)
        top_p = serializers.FloatField(allow_null=True)
        max_tokens = serializers.IntegerField(allow_null=True)
        token_ids = serializers.ListField(child=serializers.IntegerField())
        token_ids_exact = serializers.BooleanField()
        finish_reason = serializers.CharField()
        log10_p = serializers.FloatField(allow_null=True)

    @extend_schema(responses=OutputSerializer, operation_id="playground_reply_retrieve")
    def get(self, request: AuthenticatedRequest, message_id: uuid.UUID) -> Response:
        if not request.user.has_perm(PERMISSION):
            raise PermissionDenied("you may not use the playground")
        message = selectors.message_get(request.user, message_id)
        data = self.OutputSerializer(message).data
        return Response(data if is_auditor(request.user) else tiers.redact(data))
