"""The sender of a worker's Celery signals in tests (the fixture that clears the process's
worker, ``no_current_worker``, is in tests/provenance/conftest.py)."""

from __future__ import annotations


class CeleryNode:
    """What Celery sends as the signals' sender: the worker, named by its host name."""

    hostname = "celery@box"
