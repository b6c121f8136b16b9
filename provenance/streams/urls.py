from __future__ import annotations

from django.urls import path

from provenance.streams import api

urlpatterns = [
    path("api/v1/streams", api.StreamCreateApi.as_view(), name="api-streams"),
    path(
        "api/v1/streams/<uuid:stream_id>/append",
        api.StreamAppendApi.as_view(),
        name="api-stream-append",
    ),
]
