"""The user's API token: create, replace or revoke it (django-rest-knox tokens, for scripts
and /detect), and the login page."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache

from provenance.accounts.auth import AuthenticatedHttpRequest
from provenance.accounts.selectors import api_token_current
from provenance.accounts.services import api_token_revoke, api_token_rotate


@never_cache
@login_required
def api_token(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The page shows the current token's prefix and expiry; a POST replaces the token (the
    new one is shown this once) or, with ``action=revoke``, revokes it."""
    token = None
    if request.method == "POST":
        if request.POST.get("action") == "revoke":
            api_token_revoke(user=request.user)
        else:
            _, token = api_token_rotate(user=request.user)
    context: dict[str, Any] = {"current": api_token_current(request.user), "token": token}
    return render(request, "accounts/api_token.html", context)


class LoginView(auth_views.LoginView):
    """Local accounts, and the organization's sign-in when it is configured."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["oidc"] = settings.PROVENANCE_OIDC["ENABLED"] and {
            "label": settings.PROVENANCE_OIDC["LABEL"],
            "refused": self.request.GET.get("oidc") == "refused",
        }
        return context
