"""Public verification's own bounded cache, where one is configured."""

from __future__ import annotations

from django.core.cache import caches

from provenance.public.stores import public_cache


def test_the_public_cache_is_its_own_where_configured_else_the_default(settings):
    expected = caches["public"] if "public" in settings.CACHES else caches["default"]
    assert public_cache() is expected
    settings.CACHES = {"default": settings.CACHES["default"]}
    assert public_cache() is caches["default"]
