"""Where public verification keeps what it remembers (answers, peers' answers, the scrubbing
guard's fingerprints): its own bounded cache where one is configured."""

from __future__ import annotations

from django.conf import settings
from django.core.cache import BaseCache, caches


def public_cache() -> BaseCache:
    """The store of answers, peers' answers and the scrubbing guard: the bounded ``public``
    cache (``PROVENANCE_PUBLIC_CACHE_URL``) where one is configured, else the default one.
    Budgets and spent proofs of work stay in the default cache: evicting them would hand out
    budget and replays."""
    return caches["public" if "public" in settings.CACHES else "default"]
