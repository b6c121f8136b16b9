"""The registry's URLs resolve to their views."""

from __future__ import annotations

import uuid

from django.urls import resolve, reverse

from provenance.keys import api, views

KEY = uuid.UUID(int=3)


def test_each_name_reverses_to_its_path_and_resolves_to_its_view():
    assert reverse("key-list") == "/keys/" and resolve("/keys/").func == views.key_list
    calibrate = reverse("key-calibrate", args=[KEY])
    assert calibrate == f"/keys/{KEY}/calibrate"
    assert resolve(calibrate).func == views.key_calibrate
    assert resolve(calibrate).kwargs == {"key_id": KEY}
    assert reverse("api-tokenizers") == "/api/v1/tokenizers"
    assert resolve("/api/v1/tokenizers").func.view_class is api.TokenizerListCreateApi


def test_the_key_api_routes_list_and_detail_without_a_trailing_slash():
    assert reverse("api-key-list") == "/api/v1/keys"
    assert resolve("/api/v1/keys").func.cls is api.KeyViewSet
    detail = reverse("api-key-detail", args=[KEY])
    assert detail == f"/api/v1/keys/{KEY}" and resolve(detail).func.cls is api.KeyViewSet
