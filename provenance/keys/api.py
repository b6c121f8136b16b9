"""REST API for the key registry: plain CRUD, so a viewset. Values are write-once: the
create and rotate answers carry the new value a single time; nothing else ever does."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, permissions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from detector.core.config import (
    ALGORITHMS,
    DEFAULT_ALGORITHM,
    DEFAULT_ALPHA,
    DEFAULT_CONTEXT_WIDTH,
    MAX_CONTEXT_WIDTH,
)
from detector.text import mistral
from provenance.accounts.auth import AuthenticatedRequest
from provenance.accounts.selectors import team_for_user
from provenance.errors import ProblemError
from provenance.keys import selectors, services
from provenance.keys.models import Tokenizer, WatermarkKey


class KeyOutput(serializers.ModelSerializer):
    tokenizer = serializers.CharField(source="tokenizer.name")
    team = serializers.CharField(source="team.name")
    tested_by_default = serializers.SerializerMethodField(
        help_text="whether your team's checks test this key when they name no keys"
    )
    family_reason = serializers.SerializerMethodField(
        help_text=(
            "why: own_active, own_retired_within_window, shared_active, "
            "shared_retired_within_window; or why not (tested only when named): "
            "retired_past_window, shared_past_cap"
        )
    )

    class Meta:
        model = WatermarkKey
        # encrypted_value is deliberately absent.
        fields = [
            "id",
            "name",
            "team",
            "shared",
            "algorithm",
            "alpha",
            "context_width",
            "deduplicate",
            "tokenizer",
            "status",
            "rotated_from",
            "created_at",
            "retired_at",
            "tested_by_default",
            "family_reason",
        ]

    def _family(self) -> selectors.KeyFamily:
        family = self.context.get("family")
        if family is None:
            request = self.context.get("request")
            user = request.user if request is not None else self.context["user"]
            family = self.context["family"] = selectors.key_family(team_for_user(user))
        return family

    def get_tested_by_default(self, key: WatermarkKey) -> bool:
        return key.id in self._family().reasons

    def get_family_reason(self, key: WatermarkKey) -> str | None:
        family = self._family()
        return family.reasons.get(key.id) or family.left_out.get(key.id)


class FamilyLeftOutOutput(serializers.Serializer):
    retired_past_window = serializers.IntegerField()
    shared_past_cap = serializers.IntegerField()


class FamilyOutput(serializers.Serializer):
    """``selectors.KeyFamily.summary``: how many hypotheses a check that names no keys tests,
    and why."""

    hypotheses = serializers.IntegerField(help_text="keys a check naming no keys tests")
    own_active = serializers.IntegerField()
    own_retired_within_window = serializers.IntegerField()
    shared_active = serializers.IntegerField(help_text="active keys other teams share")
    shared_retired_within_window = serializers.IntegerField()
    left_out = FamilyLeftOutOutput(help_text="visible keys tested only when a check names them")
    retired_window_days = serializers.IntegerField()
    shared_cap = serializers.IntegerField(help_text="most keys of other teams in a family")


class KeyCreatedOutput(KeyOutput):
    value = serializers.CharField(help_text="The key value, shown this once only.")

    class Meta(KeyOutput.Meta):
        fields = [*KeyOutput.Meta.fields, "value"]


class RateOutput(serializers.Serializer):
    genre = serializers.CharField(help_text="prose, code or templated")
    texts = serializers.IntegerField()
    flagged = serializers.IntegerField(help_text="texts the decision called watermarked")
    rate = serializers.FloatField(help_text="the realized false-positive rate, flagged / texts")
    ci_low = serializers.FloatField(help_text="95% Clopper-Pearson interval, lower bound")
    ci_high = serializers.FloatField(help_text="95% Clopper-Pearson interval, upper bound")
    above_threshold = serializers.BooleanField(help_text="the whole interval lies above it")


class PowerPointOutput(serializers.Serializer):
    tokens = serializers.IntegerField(help_text="generated tokens (a prefix of each answer)")
    texts = serializers.IntegerField()
    detected = serializers.IntegerField()
    scored = serializers.IntegerField(help_text="median scored tokens at this length")
    power = serializers.FloatField(help_text="detected / texts")


class PowerCurveOutput(serializers.Serializer):
    setting = serializers.CharField(help_text='the temperature as a label: "1.0" or "0.7"')
    temperature = serializers.FloatField()
    top_p = serializers.FloatField(allow_null=True)
    tokens_needed = serializers.IntegerField(
        allow_null=True, help_text="shortest length from which 80% are detected (null: longer)"
    )
    scored_tokens_needed = serializers.IntegerField(allow_null=True)
    points = PowerPointOutput(many=True)


class CalibrationOutput(serializers.Serializer):
    """A finished calibration's figures (``selectors.calibration_figures``): what the keys
    page draws."""

    id = serializers.UUIDField()
    threshold = serializers.FloatField()
    measured_at = serializers.DateTimeField(allow_null=True)
    texts_per_genre = serializers.IntegerField()
    chunk_tokens = serializers.IntegerField()
    rates = RateOutput(many=True)
    assisted_rates = RateOutput(many=True, help_text="the model-assisted decision's, if measured")
    assisted_note = serializers.CharField(allow_blank=True)
    power = PowerCurveOutput(many=True, help_text="empty when the power was not measured")
    power_tokens = serializers.IntegerField()
    power_note = serializers.CharField(allow_blank=True)


class KeyCalibrationOutput(serializers.Serializer):
    key_id = serializers.UUIDField()
    pending = serializers.BooleanField(help_text="a calibration is queued or running")
    calibration = CalibrationOutput(
        allow_null=True, help_text="the latest finished calibration; null: none yet"
    )


class KeyInput(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    tokenizer_id = serializers.IntegerField(required=False)
    value = serializers.CharField(
        required=False, allow_blank=True, help_text="decimal or 0x-hex; omit to generate"
    )
    algorithm = serializers.ChoiceField(ALGORITHMS, default=DEFAULT_ALGORITHM)
    alpha = serializers.FloatField(default=DEFAULT_ALPHA, min_value=0.0, max_value=1.0)
    context_width = serializers.IntegerField(
        default=DEFAULT_CONTEXT_WIDTH, min_value=1, max_value=MAX_CONTEXT_WIDTH
    )
    deduplicate = serializers.BooleanField(default=True)
    shared = serializers.BooleanField(default=False)


class ManageKeys(permissions.DjangoModelPermissions):
    """Reading needs only a team; writing needs the model permission (admins grant it)."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return bool(request.user and request.user.is_authenticated)
        return super().has_permission(request, view)


def _created(key: WatermarkKey, value: int, user: Any) -> dict:
    data = dict(KeyOutput(key, context={"user": user}).data)
    data["value"] = str(value)
    return data


class KeyViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = KeyOutput
    permission_classes = [ManageKeys]
    queryset = WatermarkKey.objects.none()  # for the permission class's model lookup

    def get_queryset(self) -> QuerySet[WatermarkKey]:
        return selectors.keys_visible_to(team_for_user(self.request.user)).order_by(
            "created_at", "id"
        )

    @extend_schema(request=KeyInput, responses={201: KeyCreatedOutput})
    def create(self, request: AuthenticatedRequest) -> Response:
        team = team_for_user(request.user)
        if team is None:
            raise ProblemError("your account belongs to no team", status_code=403)
        data = self._valid(request)
        if data.get("shared") and not request.user.has_perm("keys.share_watermarkkey"):
            raise ProblemError("sharing a key needs the keys.share_watermarkkey permission", 403)
        tokenizer = self._tokenizer(data.pop("tokenizer_id", None))
        key, value = services.key_create(
            team=team, tokenizer=tokenizer, created_by=request.user, **data
        )
        return Response(_created(key, value, request.user), status=status.HTTP_201_CREATED)

    def _valid(self, request: Request) -> dict:
        serializer = KeyInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)

    def _tokenizer(self, tokenizer_id: int | None) -> Tokenizer:
        if tokenizer_id is None:
            return services.tokenizer_default()
        tokenizer = Tokenizer.objects.filter(id=tokenizer_id).first()
        if tokenizer is None:
            raise ProblemError(f"unknown tokenizer id {tokenizer_id}")
        return tokenizer

    def _own_key(self) -> WatermarkKey:
        key = self.get_object()
        if key.team_id != getattr(team_for_user(self.request.user), "id", None):
            raise ProblemError("only the owning team can change this key", status_code=403)
        return key

    @extend_schema(request=None, responses={201: KeyCreatedOutput})
    @action(detail=True, methods=["post"])
    def rotate(self, request: AuthenticatedRequest, pk: str | None = None) -> Response:
        new_key, value = services.key_rotate(key=self._own_key(), created_by=request.user)
        return Response(_created(new_key, value, request.user), status=status.HTTP_201_CREATED)

    @extend_schema(responses=KeyCalibrationOutput)
    @action(detail=True, methods=["get"])
    def calibration(self, request: Request, pk: str | None = None) -> Response:
        """The key's latest measured false-positive rates and power curve."""
        key = self.get_object()
        run = selectors.latest_calibrations([key]).get(key.id)
        body = {
            "key_id": key.id,
            "pending": key.id in selectors.pending_calibrations([key]),
            "calibration": selectors.calibration_figures(run),
        }
        return Response(KeyCalibrationOutput(body).data)

    @extend_schema(request=None, responses=KeyOutput)
    @action(detail=True, methods=["post"])
    def retire(self, request: Request, pk: str | None = None) -> Response:
        key = services.key_retire(key=self._own_key())
        return Response(KeyOutput(key, context={"user": request.user}).data)

    @extend_schema(responses=FamilyOutput)
    @action(detail=False, methods=["get"])
    def family(self, request: Request) -> Response:
        """How many hypotheses your team's checks test when they name no keys, and why."""
        family = selectors.key_family(team_for_user(request.user))
        return Response(FamilyOutput(family.summary()).data)


class TokenizerOutput(serializers.ModelSerializer):
    has_model = serializers.BooleanField(
        read_only=True, help_text="A model is registered: checks run the model-assisted test."
    )

    class Meta:
        model = Tokenizer
        fields = [
            "id",
            "name",
            "source_kind",
            "content_hash",
            "vocab_size",
            "has_model",
            "created_at",
        ]


class TokenizerListCreateApi(APIView):
    """List the registered tokenizers; register one (model permission ``keys.add_tokenizer``):
    a Hugging Face ``tokenizer.json`` as multipart field ``file``, or a built-in by name."""

    permission_classes = [ManageKeys]
    queryset = Tokenizer.objects.none()  # for the permission class's model lookup

    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=100)
        file = serializers.FileField(required=False, help_text="a Hugging Face tokenizer.json")
        builtin = serializers.ChoiceField(
            list(mistral.BUILTINS), required=False, help_text="a mistral-common built-in"
        )

        def validate(self, data: dict[str, Any]) -> dict[str, Any]:
            if ("file" in data) == ("builtin" in data):
                raise serializers.ValidationError("send exactly one of file and builtin")
            return data

    @extend_schema(responses=TokenizerOutput(many=True))
    def get(self, request: Request) -> Response:
        return Response(TokenizerOutput(Tokenizer.objects.order_by("name"), many=True).data)

    @extend_schema(
        request={"multipart/form-data": InputSerializer, "application/json": InputSerializer},
        responses={201: TokenizerOutput},
    )
    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if "builtin" in data:
            tokenizer = services.tokenizer_register(
                name=data["name"], source_kind=Tokenizer.Source.BUILTIN, source_path=data["builtin"]
            )
        else:
            tokenizer = services.tokenizer_upload(name=data["name"], content=data["file"].read())
        return Response(TokenizerOutput(tokenizer).data, status=status.HTTP_201_CREATED)
