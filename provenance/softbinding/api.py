"""C2PA's Soft Binding Resolution API (v1.0.0) under ``/c2pa/v1/`` (docs/c2pa.md).

Every route is public verification's door: a partner's bearer key or, for anonymous
callers, the address's budget; ``byContent`` (which tests the asset's watermark) also asks an
anonymous caller for the proof of work in ``X-Provenance-PoW``, as ``/api/public/v1/verify``
does. Query parameters and JSON fields are allowlists; a body's media type and declared length
are checked before a byte of it is read.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import BaseThrottle

from provenance.errors import ProblemError
from provenance.public import budgets
from provenance.public import services as public
from provenance.public.api import (
    POW_HEADER,
    PublicApi,
    UnsupportedMediaType,
    _problem,
    body_door,
)
from provenance.public.models import Partner
from provenance.softbinding import services

C2PA = "application/c2pa"
BY_CONTENT_QUERY = frozenset({"alg", "maxResults", "hintAlg", "hintValue"})
BY_BINDING_QUERY = frozenset({"alg", "value", "maxResults"})


@extend_schema_serializer(component_name="C2paSoftBindingMatch")
class MatchSerializer(serializers.Serializer):
    manifestId = serializers.CharField()  # noqa: N815  # the specification's names
    similarityScore = serializers.IntegerField(required=False, min_value=0, max_value=100)  # noqa: N815


@extend_schema_serializer(component_name="C2paSoftBindingQueryResult")
class ResultSerializer(serializers.Serializer):
    matches = MatchSerializer(many=True)


def _query(request: Request, allowed: frozenset[str]) -> dict[str, str]:
    unknown = sorted(name for name in request.query_params if name not in allowed)
    if unknown:
        raise ProblemError(f"unknown query parameters: {', '.join(unknown[:3])}")
    repeated = sorted(n for n in request.query_params if len(request.query_params.getlist(n)) > 1)
    if repeated:
        raise ProblemError(f"query parameters given twice: {', '.join(repeated[:3])}")
    return {name: request.query_params[name] for name in request.query_params}


def _caller(request: Request, proof_required: bool) -> public.Caller:
    partner = request.auth if isinstance(request.auth, Partner) else None
    address = BaseThrottle().get_ident(request)
    if partner is not None:
        budgets.partner_spend(partner)
        return public.Caller(address=address, partner=partner)
    caller = public.Caller(address=address, proof=request.META.get(POW_HEADER))
    if proof_required:
        public.admit(caller)
    else:
        budgets.anonymous_spend(address)
    return caller


def _answer(matches: list[dict[str, Any]]) -> Response:
    return Response({"matches": matches}, headers={"Cache-Control": "no-store"})


class SupportedAlgorithmsApi(PublicApi):
    """The soft binding algorithms this service resolves."""

    @extend_schema(operation_id="c2pa_supported_algorithms", responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        try:
            _query(request, frozenset())
        except ProblemError as exc:
            return _problem(exc)
        return Response(services.supported_algorithms())


class ByContentApi(PublicApi):
    """The manifests of the published model whose watermark the asset carries."""

    parser_classes: list[Any] = []  # the body is the asset, read as bytes

    @extend_schema(
        operation_id="c2pa_matches_by_content",
        parameters=[
            OpenApiParameter("alg", str),
            OpenApiParameter("maxResults", int),
            OpenApiParameter("hintAlg", str),
            OpenApiParameter("hintValue", str),
        ],
        request={media: OpenApiTypes.BINARY for media in services.ASSET_TYPES},
        responses=ResultSerializer,
    )
    def post(self, request: Request) -> Response:
        try:
            query = _query(request, BY_CONTENT_QUERY)
            services.check_alg(query.get("alg"), required=False)
            limit = services.max_results(query.get("maxResults"))
            media = body_door(request, _asset_limits())
            caller = _caller(request, proof_required=True)
            asset = request._request.body
            matches = services.matches_by_content(
                caller=caller, asset=asset, media_type=media, limit=limit
            )
        except ProblemError as exc:
            return _problem(exc)
        return _answer(matches)


def _asset_limits() -> dict[str, int]:
    """The largest asset of each media type byContent takes: a plain text of at most
    ``PROVENANCE_MAX_TEXT_BYTES``, a document of at most ``PROVENANCE_MAX_DOCUMENT_BYTES``."""
    return {
        media: settings.PROVENANCE_MAX_TEXT_BYTES
        if media == "text/plain"
        else settings.PROVENANCE_MAX_DOCUMENT_BYTES
        for media in sorted(services.ASSET_TYPES)
    }


class ByBindingApi(PublicApi):
    """The manifests kept for a soft binding value (GET: in the query; POST: in a JSON body)."""

    @extend_schema(
        operation_id="c2pa_matches_by_binding",
        parameters=[
            OpenApiParameter("alg", str, required=True),
            OpenApiParameter("value", str, required=True),
            OpenApiParameter("maxResults", int),
        ],
        responses=ResultSerializer,
    )
    def get(self, request: Request) -> Response:
        try:
            query = _query(request, BY_BINDING_QUERY)
            limit = services.max_results(query.get("maxResults"))
            services.check_alg(query.get("alg"), required=True)
            caller = _caller(request, proof_required=False)
            matches = services.matches_by_binding(
                query.get("alg"), query.get("value"), limit, services.requester_tag(caller)
            )
        except ProblemError as exc:
            return _problem(exc)
        return _answer(matches)

    @extend_schema_serializer(component_name="C2paSoftBindingQuery")
    class QuerySerializer(serializers.Serializer):
        alg = serializers.CharField()
        value = serializers.CharField()

    @extend_schema(
        operation_id="c2pa_matches_by_large_binding",
        parameters=[OpenApiParameter("maxResults", int)],
        request=QuerySerializer,
        responses=ResultSerializer,
    )
    def post(self, request: Request) -> Response:
        try:
            query = _query(request, frozenset({"maxResults"}))
            limit = services.max_results(query.get("maxResults"))
            if request.META.get("CONTENT_TYPE", "").split(";")[0].strip() != "application/json":
                raise UnsupportedMediaType("send application/json")
            data = request.data
            if not isinstance(data, dict):
                raise ProblemError("the body must be a JSON object")
            # An undeclared field or a repeated key was refused by the API's parsers.
            services.check_alg(data.get("alg"), required=True)
            caller = _caller(request, proof_required=False)
            matches = services.matches_by_binding(
                data.get("alg"), data.get("value"), limit, services.requester_tag(caller)
            )
        except ProblemError as exc:
            return _problem(exc)
        return _answer(matches)


class ManifestApi(PublicApi):
    """A kept manifest store (``application/c2pa``), which the C2PA SDK reads."""

    @extend_schema(
        operation_id="c2pa_manifest",
        parameters=[OpenApiParameter("returnActiveManifest", bool)],
        responses={(200, C2PA): OpenApiTypes.BINARY},
    )
    def get(self, request: Request, manifest_id: str) -> Response | HttpResponse:
        try:
            query = _query(request, frozenset({"returnActiveManifest"}))
            if query.get("returnActiveManifest", "false") not in ("true", "false"):
                raise ProblemError("returnActiveManifest is true or false")
            _caller(request, proof_required=False)
            store = services.manifest_store(manifest_id)
        except ProblemError as exc:
            return _problem(exc)
        if store is None:
            return _problem(ProblemError("no such manifest", status_code=404))
        # One manifest per store: the active manifest alone is the whole store.
        response = HttpResponse(store, content_type=C2PA)
        response["Content-Disposition"] = 'attachment; filename="manifest.c2pa"'
        response["Cache-Control"] = "public, max-age=3600"
        return response
