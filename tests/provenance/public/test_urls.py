"""The public routes and their names."""

from __future__ import annotations

from django.urls import reverse


def test_the_public_routes_have_their_paths():
    assert reverse("public-discovery") == "/.well-known/provenance.json"
    assert reverse("public-verify-api") == "/api/public/v1/verify"
    assert reverse("public-challenge") == "/api/public/v1/challenge"
    assert reverse("public-verify") == "/verify/"
