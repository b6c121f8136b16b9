"""The user's API token: create or replace it (DRF token auth for scripts and /detect)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache

from provenance.accounts.services import api_token_rotate
from provenance.auth import AuthenticatedHttpRequest


@never_cache
@login_required
def api_token(request: AuthenticatedHttpRequest) -> HttpResponse:
    context: dict[str, Any] = {"has_token": hasattr(request.user, "auth_token"), "token": None}
    if request.method == "POST":
        context.update(has_token=True, token=api_token_rotate(user=request.user))
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
