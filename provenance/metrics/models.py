"""Counters of events that happen outside the web processes and leave no row of their own
(the sweeper's passes): one row per counter, added to in the database so that every web
instance's ``/metrics`` reads the same figure whichever host did the work."""

from __future__ import annotations

from django.db import models


class Tally(models.Model):
    """A monotonic counter (``provenance.metrics.services.tally_add``)."""

    name = models.CharField(max_length=64, unique=True)
    value = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} = {self.value}"


class Snapshot(models.Model):
    """The checks' figures up to two watermarks, shared by every web process and host
    (``provenance.metrics.collector``): one row, advanced by whichever scrape comes first, so
    a new process reads only what was written since, never the whole table again."""

    created_until = models.DateTimeField(null=True, blank=True)
    finished_until = models.DateTimeField(null=True, blank=True)
    totals = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"metrics up to {self.created_until} / {self.finished_until}"
