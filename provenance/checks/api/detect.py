"""``POST /detect``: a drop-in for vLLM's example detection server (same request, same fields,
plus ours), answered in the request."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.response import Response

from detector.decision.decide import gamma_summary
from provenance.accounts.auth import AuthenticatedRequest
from provenance.checks import services
from provenance.checks.api.base import DETECT_THROTTLES, TextField, TieredApi, body_size_guard
from provenance.checks.api.checks import ContentCredentialsOutput, SpanOutput
from provenance.checks.models import Verdict


class DetectApi(TieredApi):
    """Drop-in for vLLM's example detection server: same request, same fields, plus ours."""

    throttle_classes = DETECT_THROTTLES

    @extend_schema_serializer(component_name="DetectInput")
    class InputSerializer(serializers.Serializer):
        text = TextField()

    @extend_schema_serializer(component_name="DetectOutput")
    class OutputSerializer(serializers.Serializer):
        score = serializers.FloatField(
            help_text="upstream's: the best key's sum of scores over every de-duplicated token"
        )
        p_value = serializers.FloatField(
            help_text="upstream's: the best key's Gamma p-value over every de-duplicated "
            "token, neither scan-corrected nor family-corrected (decision_p_value decides)"
        )
        num_scored_tokens = serializers.IntegerField(help_text="upstream's: de-duplicated tokens")
        is_watermarked = serializers.BooleanField(help_text="the decision's")
        decision_p_value = serializers.FloatField(
            help_text="the decision's p-value: span scan, model reading and family corrected"
        )
        reading = serializers.CharField(
            help_text="none: answered without a model's reading (this route never reads)"
        )
        content_credentials = ContentCredentialsOutput(
            help_text="what the text's C2PA Content Credentials say (docs/c2pa.md)"
        )
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
        body_size_guard(request)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        result = services.detect_now(user=request.user, text=serializer.validated_data["text"])
        return Response(self.OutputSerializer(_detect_body(result)).data)


def _detect_body(result: Any) -> dict[str, Any]:
    best = result.hypotheses[result.best] if result.best is not None else None
    d = best.detection if best else None
    return {
        # upstream vLLM's example server's figures, as it computes them (one key)
        "score": d.vllm_score if d else 0.0,
        "p_value": d.vllm_p_value if d else 1.0,
        "num_scored_tokens": d.vllm_num_scored_tokens if d else 0,
        "is_watermarked": result.is_watermarked,
        "decision_p_value": result.p_value,
        "reading": result.reading,
        "content_credentials": result.content_credentials,
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
