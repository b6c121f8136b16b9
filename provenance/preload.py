"""What a pre-forking server loads before it forks (``provenance.wsgi`` calls ``preload``
under ``PROVENANCE_WEB_PRELOAD=1``).

Under ``gunicorn --preload`` (the embedded runner) the WSGI module is imported once in the
master and every worker is forked from it. Django resolves the URLconf, DRF and
drf-spectacular on the first request, and the scoring path loads tokenizers and their n-gram
tables on first use: left to the workers, each would import some 750 modules and load the
same files again after the fork, and a worker that replaces a dead one would answer its first
requests slowly. ``preload`` does that work once, in the master; the workers share it.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


def preload(*, tokenizers: bool) -> None:
    """Import what the first request would (the URLconf and every view module, the scoring
    path); with ``tokenizers``, load every registered tokenizer and its n-gram table too, then
    close the database connections that took, so that no forked worker shares one."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - the URLconf, DRF and drf-spectacular
    import detector.core.compiled  # noqa: F401 - the compiled passes for long texts (Numba)
    import provenance.cache  # noqa: F401
    import provenance.throttling  # noqa: F401

    if not tokenizers:
        return
    from django.db import DatabaseError, connections

    from provenance.checks.services.warmup import tokenizers_load

    try:
        for loaded in tokenizers_load():
            loaded.ngram_table  # noqa: B018
    except DatabaseError as exc:  # not migrated yet, or down: the workers load on first use
        logger.warning("tokenizers not preloaded: %s", type(exc).__name__)
    finally:
        connections.close_all()
