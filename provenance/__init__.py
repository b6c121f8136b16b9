"""Provenance web product: Django project (settings, urls, Celery app) and its apps."""

from __future__ import annotations
