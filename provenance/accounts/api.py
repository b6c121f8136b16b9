"""Revoking API tokens over the API (django-rest-knox's logout views, under the project's
token authentication): ``POST /api/v1/token/revoke`` revokes the token the request carries,
``POST /api/v1/token/revoke-all`` every token of its user. Both answer 204."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from knox import views as knox_views

from provenance.accounts.auth import TokenAuthentication


@extend_schema(request=None, responses={204: None}, summary="Revoke the token sent")
class TokenRevokeApi(knox_views.LogoutView):
    authentication_classes = (TokenAuthentication,)


@extend_schema(request=None, responses={204: None}, summary="Revoke every token of the user")
class TokenRevokeAllApi(knox_views.LogoutAllView):
    authentication_classes = (TokenAuthentication,)
