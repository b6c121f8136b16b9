"""Pages of the registry for team members: which keys a check tests (never their values).
Administration (create, rotate, retire) lives in the Django admin."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from provenance.accounts.selectors import team_for_user
from provenance.keys.selectors import keys_visible_to


@login_required
def key_list(request: HttpRequest) -> HttpResponse:
    team = team_for_user(request.user)
    keys = keys_visible_to(team).order_by("status", "name")
    return render(request, "keys/key_list.html", {"keys": keys, "team": team})
