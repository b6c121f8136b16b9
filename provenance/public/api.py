"""Public verification over HTTP, no account: the discovery document, a proof-of-work
challenge and ``POST /api/public/v1/verify``. Partners authenticate with
``Authorization: Bearer KEY``; anyone else sends a solved challenge (``X-Provenance-PoW``, or
``pow`` in a JSON body).

The verify route's doors, each shut unless opened here: the media types ``BODY_LIMITS``
names, each with its largest ``Content-Length`` (checked before a byte of the body is read;
no length, 411); the proof of work and the budget from the headers before a multipart body
is read (a file needs the header); the fields ``VerifyApi.InputSerializer`` declares, each
once (the API's parsers, ``provenance.api_input``: a JSON body is refused before its proof
is checked)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from detector.decision.combined import CORRECTION as COMBINED_CORRECTION
from provenance.checks.api.base import read_upload
from provenance.checks.models import Verdict
from provenance.errors import PayloadTooLarge, ProblemError
from provenance.lib.identity import client_address
from provenance.public import proof_of_work, selectors, services
from provenance.public.models import Partner

POW_HEADER = "HTTP_X_PROVENANCE_POW"
JSON, MULTIPART = "application/json", "multipart/form-data"
ENVELOPE = 64 * 1024  # a body's bytes beyond its text or file: fields, boundaries, headers


def body_limits() -> dict[str, int]:
    """The largest body of each media type the verify route takes: a JSON text of at most
    ``PROVENANCE_MAX_TEXT_BYTES`` (each byte escaped at worst to six), a multipart file of
    at most ``PROVENANCE_MAX_DOCUMENT_BYTES`` or such a text."""
    text = settings.PROVENANCE_MAX_TEXT_BYTES
    document = max(settings.PROVENANCE_MAX_DOCUMENT_BYTES, text)
    return {JSON: 6 * text + ENVELOPE, MULTIPART: document + ENVELOPE}


class LengthRequired(ProblemError):
    status_code = 411
    default_code = "length_required"


class UnsupportedMediaType(ProblemError):
    status_code = 415
    default_code = "unsupported_media_type"


def body_door(request: Request, limits: Mapping[str, int] | None = None) -> str:
    """The body's media type, once its type and declared length pass (before any read):
    ``limits`` maps each media type taken to its largest body (the verify route's,
    ``body_limits()``, by default)."""
    media = request.META.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
    limits = body_limits() if limits is None else limits
    if media not in limits:
        raise UnsupportedMediaType(f"send {' or '.join(limits)}")
    try:
        length = int(request.META.get("CONTENT_LENGTH") or "")
    except ValueError:
        raise LengthRequired("a Content-Length is required") from None
    if length < 0:
        raise LengthRequired("a Content-Length is required")
    if length > limits[media]:
        raise PayloadTooLarge(f"the body is {length} bytes; the limit is {limits[media]}")
    return media


class PartnerAuthentication(BaseAuthentication):
    """``Authorization: Bearer KEY`` of an unrevoked partner (``request.auth``: the
    Partner); no header: anonymous; a wrong or revoked key: 401."""

    def authenticate(self, request: Request) -> tuple[Any, Partner] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != b"bearer":
            return None
        if len(parts) != 2:
            raise AuthenticationFailed("the Authorization header is Bearer KEY")
        partner = selectors.partner_by_key(parts[1].decode("latin-1"))
        if partner is None:
            raise AuthenticationFailed("unknown or revoked partner key")
        from django.contrib.auth.models import AnonymousUser

        return AnonymousUser(), partner

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="provenance-public"'


class PartnerScheme(OpenApiAuthenticationExtension):
    """The partners' bearer key in the OpenAPI schema."""

    target_class = "provenance.public.api.PartnerAuthentication"
    name = "PartnerKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer"}


@require_GET
def discovery_view(request: HttpRequest) -> JsonResponse:
    """``/.well-known/provenance.json``: public, cacheable."""
    response = JsonResponse(selectors.discovery(request))
    response["Cache-Control"] = "public, max-age=300"
    return response


@extend_schema_serializer(component_name="PublicSupportedClaim")
class SupportedSerializer(serializers.Serializer):
    organization = serializers.CharField()
    model = serializers.CharField(allow_null=True)
    strength = serializers.IntegerField(
        help_text=f"{COMBINED_CORRECTION}-corrected over the organizations asked: "
        "p < 10^(strength+1)"
    )


@extend_schema_serializer(component_name="PublicPeerLine")
class PeerSerializer(serializers.Serializer):
    organization = serializers.CharField()
    discovery = serializers.URLField()
    status = serializers.ChoiceField(
        choices=["answered", "unreachable", "refused", "receipt_invalid", "not_asked"]
    )
    verdict = serializers.ChoiceField(choices=Verdict.choices, allow_null=True)
    model = serializers.CharField(allow_null=True)
    strength = serializers.IntegerField(
        allow_null=True, help_text="p < 10^(strength+1) (a band, or an older peer's floor)"
    )
    tokens_scored = serializers.IntegerField(allow_null=True)
    receipt = serializers.CharField(allow_null=True, help_text="the peer's JWS, verified")
    jwks_uri = serializers.URLField(allow_null=True)


@extend_schema_serializer(component_name="PublicCombinedClaim")
class CombinedSerializer(serializers.Serializer):
    verdict = serializers.ChoiceField(choices=Verdict.choices)
    organizations = serializers.IntegerField(help_text="m: the organizations asked")
    correction = serializers.CharField(
        help_text=f"the correction over the organizations asked: {COMBINED_CORRECTION}"
    )
    supported = SupportedSerializer(many=True, help_text="the claims that stand")


class PublicApi(APIView):
    authentication_classes = [PartnerAuthentication]
    permission_classes = [AllowAny]
    throttle_classes: list[type[BaseThrottle]] = []  # the budgets are the service's own


class ChallengeApi(PublicApi):
    """A fresh proof-of-work challenge (ALTCHA v1, SHA-256)."""

    @extend_schema_serializer(component_name="PublicChallenge")
    class OutputSerializer(serializers.Serializer):
        algorithm = serializers.CharField()
        challenge = serializers.CharField()
        maxNumber = serializers.IntegerField()  # noqa: N815  # ALTCHA's field name
        salt = serializers.CharField()
        signature = serializers.CharField()

    @extend_schema(responses=OutputSerializer)
    def get(self, request: Request) -> Response:
        return Response(proof_of_work.challenge_create(), headers={"Cache-Control": "no-store"})


class VerifyApi(PublicApi):
    """Test a text against every published model: verdict, model, strength, tokens scored
    and a signed receipt; nothing more."""

    @extend_schema_serializer(component_name="PublicVerifyInput")
    class InputSerializer(serializers.Serializer):
        text = serializers.CharField(trim_whitespace=False, allow_blank=True, required=False)
        file = serializers.FileField(
            required=False,
            help_text="instead of text (multipart): a .txt, .md, .html, .docx or .pdf file",
        )
        pow = serializers.CharField(required=False, help_text="a solved ALTCHA payload")
        peers = serializers.BooleanField(
            required=False, default=True, help_text="false: ask no peer organization"
        )

    @extend_schema_serializer(component_name="PublicVerifyOutput")
    class OutputSerializer(serializers.Serializer):
        verdict = serializers.ChoiceField(choices=Verdict.choices)
        model = serializers.CharField(allow_null=True)
        strength = serializers.IntegerField(
            allow_null=True,
            help_text="the corrected p's band, when watermarked: p < 10^(strength+1), "
            "strength one of -31, -13, -7, -3 (-1: p < 1)",
        )
        tokens_scored = serializers.IntegerField()
        receipt = serializers.CharField(help_text="compact JWS (Ed25519)")
        peers = PeerSerializer(many=True, required=False, help_text="with peers configured")
        combined = CombinedSerializer(required=False, help_text="with peers configured")

    @extend_schema(
        request={
            "application/json": InputSerializer,
            "multipart/form-data": InputSerializer,
        },
        responses=OutputSerializer,
    )
    def post(self, request: Request) -> Response:
        partner = request.auth if isinstance(request.auth, Partner) else None
        text: Any = None
        try:
            media = body_door(request)
            proof = request.META.get(POW_HEADER)
            address = client_address(request)  # behind the trusted proxies, if any
            if partner is not None or proof:  # admitted on the headers alone
                caller = services.Caller(address=address, partner=partner, proof=proof)
            elif media == MULTIPART:
                raise proof_of_work.ProofOfWorkRequired(
                    "a file is sent with its proof of work in the X-Provenance-PoW header"
                )
            else:  # a JSON body, bounded above, may carry the proof as "pow"
                caller = services.Caller(address=address, proof=_data(request).get("pow"))
            services.admit(caller)
            data = _data(request)
            text, upload = data.get("text"), data.get("file")
            document = None
            if upload is not None and hasattr(upload, "read"):
                document = (str(upload.name), read_upload(upload))
            answer = services.verify(
                caller=caller,
                text=text,
                document=document,
                ask_peers=_flag(data.get("peers")),
                admitted=True,
            )
        except ProblemError as exc:
            if partner is not None:
                services.usage_log(partner, exc.status_code, text)
            return _problem(exc)
        if partner is not None:
            services.usage_log(partner, 200, text, answer["verdict"])
        return Response(self.OutputSerializer(answer).data, headers={"Cache-Control": "no-store"})


def _data(request: Request) -> Any:
    data = request.data
    return data if hasattr(data, "get") and hasattr(data, "__iter__") else {}


def _flag(value: Any) -> bool:
    """The ``peers`` field: absent or true asks the peers; false (JSON, or "false"/"0" in a
    form) does not."""
    if value is None:
        return True
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() not in {"false", "0", "no", "off"}


def _problem(exc: ProblemError) -> Response:
    body: dict[str, Any] = {"detail": exc.message, "code": exc.code}
    headers = {"Cache-Control": "no-store"}
    if isinstance(exc, proof_of_work.ProofOfWorkRequired):
        body["challenge"] = proof_of_work.challenge_create()
    retry = getattr(exc, "retry_after", None)
    if retry is not None:
        headers["Retry-After"] = str(retry)
    return Response(body, status=exc.status_code, headers=headers)
