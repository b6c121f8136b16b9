"""The stream URLs resolve to their API views; ids are UUIDs."""

from __future__ import annotations

import uuid

import pytest
from django.urls import Resolver404, resolve, reverse

from provenance.streams import api

ID = uuid.UUID(int=5)


def test_each_name_reverses_to_its_path_and_resolves_to_its_view():
    assert reverse("api-streams") == "/api/v1/streams"
    assert resolve("/api/v1/streams").func.view_class is api.StreamCreateApi
    path = reverse("api-stream-append", args=[ID])
    assert path == f"/api/v1/streams/{ID}/append"
    assert resolve(path).func.view_class is api.StreamAppendApi
    assert resolve(path).kwargs == {"stream_id": ID}
    with pytest.raises(Resolver404):
        resolve("/api/v1/streams/7/append")
