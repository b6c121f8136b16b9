from __future__ import annotations

from django.urls import path

from provenance.public import api, views

urlpatterns = [
    path(".well-known/provenance.json", api.discovery_view, name="public-discovery"),
    path("api/public/v1/challenge", api.ChallengeApi.as_view(), name="public-challenge"),
    path("api/public/v1/verify", api.VerifyApi.as_view(), name="public-verify-api"),
    path("verify/", views.verify_page, name="public-verify"),
]
