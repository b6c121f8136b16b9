from __future__ import annotations

from django.urls import path
from rest_framework.routers import SimpleRouter

from provenance.keys import views
from provenance.keys.api import KeyViewSet, TokenizerListCreateApi

router = SimpleRouter(trailing_slash=False)
router.register("api/v1/keys", KeyViewSet, basename="api-key")

urlpatterns = [
    path("keys/", views.key_list, name="key-list"),
    path("keys/<uuid:key_id>/calibrate", views.key_calibrate, name="key-calibrate"),
    path("api/v1/tokenizers", TokenizerListCreateApi.as_view(), name="api-tokenizers"),
    *router.urls,
]
