"""Provenance web product: Django project (settings, urls, Celery app) and its apps."""

from __future__ import annotations

# Importing the project must configure Celery, so that .delay() reaches the Redis broker.
from provenance.celery import app as celery_app

__all__ = ["celery_app"]
