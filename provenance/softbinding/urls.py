from __future__ import annotations

from django.urls import path

from provenance.softbinding import api

urlpatterns = [
    path(
        "c2pa/v1/services/supportedAlgorithms",
        api.SupportedAlgorithmsApi.as_view(),
        name="c2pa-supported-algorithms",
    ),
    path("c2pa/v1/matches/byContent", api.ByContentApi.as_view(), name="c2pa-by-content"),
    path("c2pa/v1/matches/byBinding", api.ByBindingApi.as_view(), name="c2pa-by-binding"),
    path("c2pa/v1/manifests/<path:manifest_id>", api.ManifestApi.as_view(), name="c2pa-manifest"),
]
