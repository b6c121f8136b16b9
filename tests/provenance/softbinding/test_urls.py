"""The resolution API's routes under /c2pa/v1/, as the specification names them."""

from __future__ import annotations

from django.urls import resolve, reverse

from provenance.softbinding import urls  # noqa: F401  (the routes under test)


def test_the_routes_are_the_specifications():
    assert reverse("c2pa-supported-algorithms") == "/c2pa/v1/services/supportedAlgorithms"
    assert reverse("c2pa-by-content") == "/c2pa/v1/matches/byContent"
    assert reverse("c2pa-by-binding") == "/c2pa/v1/matches/byBinding"
    found = resolve("/c2pa/v1/manifests/urn:c2pa:1234")
    assert found.kwargs == {"manifest_id": "urn:c2pa:1234"}
