"""Model rows kept per process and checked against the database on every use.

A hot read (a team's key family on every check) costs its SQL's compilation by Django's ORM
several times what the database takes to answer it. ``validated`` keeps the query's compiled
SQL and the objects it built; each call runs that SQL on the connection's cursor (no ORM) and
compares the raw rows with the ones the objects were built from: equal, the kept objects are
returned; different (a key created, rotated, retired, recalibrated, its tokenizer or team
changed, in any process), the query runs again through the ORM. Nothing is ever stale, so
nothing needs invalidating. The SQL is compiled once per key and process: a query whose SQL
depends on anything but its key (the time, a setting) does not belong here.

Returned objects are shared by every thread of the process: callers read them, never change
them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from django.db import connections
from django.db.models import Model, QuerySet

LIMIT = 10_000  # entries per process: keys are few; the store never grows without end


@dataclass(frozen=True)
class _Entry:
    db: str
    sql: str
    params: tuple[Any, ...]
    rows: list[tuple[Any, ...]] | None = None
    objects: tuple[Model, ...] = ()


_entries: dict[Hashable, _Entry] = {}
_lock = threading.Lock()


def validated(key: Hashable, build: Callable[[], QuerySet[Any]]) -> list[Any]:
    """The objects of ``build()`` (a queryset whose SQL depends on ``key`` alone), read
    through the ORM only when the database's rows changed since the last call with ``key``
    in this process."""
    entry = _entries.get(key)
    if entry is None:
        query = build()
        sql, params = query.query.get_compiler(using=query.db).as_sql()
        entry = _Entry(query.db, sql, tuple(params))
    rows = _rows(entry)
    if entry.rows is None or rows != entry.rows:
        # Rows first, objects after: a change in between makes the next call read again.
        entry = _Entry(entry.db, entry.sql, entry.params, rows, tuple(build()))
    with _lock:
        if len(_entries) >= LIMIT and key not in _entries:
            _entries.clear()
        _entries[key] = entry
    return list(entry.objects)


def _rows(entry: _Entry) -> list[tuple[Any, ...]]:
    with connections[entry.db].cursor() as cursor:
        cursor.execute(entry.sql, entry.params)
        return [tuple(_comparable(v) for v in row) for row in cursor.fetchall()]


def _comparable(value: Any) -> Any:
    return bytes(value) if isinstance(value, memoryview) else value


def clear() -> None:
    """Forget every entry (tests; the next call reads through the ORM)."""
    with _lock:
        _entries.clear()
