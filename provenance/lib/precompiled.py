"""Hot reads whose SQL Django's ORM compiles once per thread instead of on every call.

Reading one check with its key, submitter and hypotheses cost several times in the ORM's
compilation of the two queries what the database takes to answer them. ``objects`` keeps,
per thread and per ``key``, the SQL and the compiler that the ORM made for ``build()`` the
first time, then runs that SQL with the call's ``params`` on the connection's cursor and makes
the model instances from the rows as the ORM's own iterable does (``select_related`` objects
included, deferred fields left deferred). Nothing but the statement's text is kept: every
call reads the database, and each call's objects are its own.

``params`` are the statement's parameters in order, as the database receives them
(``prepared`` gives a field's); the first compilation checks them against the ORM's own, and
a query whose parameters differ, or that the ORM would read otherwise (``prefetch_related``,
``values``, ...), is read through the ORM on every call instead. The query's shape must not
depend on the parameters' values (a filter on ``None`` compiles to ``IS NULL``): callers keep
them of one kind. ``update`` does the same for an UPDATE, and ``update_returning`` for an UPDATE
that returns the rows it changed (one round trip where there were two).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import connections, models
from django.db.models.query import ModelIterable, get_related_populators  # type: ignore[attr-defined]
from django.db.models.sql import UpdateQuery
from django.db.models.sql.compiler import SQLCompiler

M = TypeVar("M", bound=models.Model)

LIMIT = 1_000  # templates per thread: a handful of read shapes use this


@dataclass(frozen=True)
class _Template:
    db: str
    sql: str
    compiler: SQLCompiler
    init_list: list[str]
    start: int
    end: int
    populators: list[Any]


class _Templates(threading.local):
    def __init__(self) -> None:
        self.by_key: dict[Hashable, _Template | None] = {}
        self.updates: dict[Hashable, tuple[str, str] | None] = {}
        self.returning: dict[Hashable, _Returning | None] = {}


_local = _Templates()


def _field(model: type[models.Model], name: str) -> models.Field[Any, Any]:
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    return field


def prepared(model: type[models.Model], name: str, value: Any, db: str = "default") -> Any:
    """``value`` as the database receives it for ``model``'s field ``name`` in a filter."""
    field = _field(model, name)
    if field.is_relation and isinstance(value, models.Model):
        value = value.pk
    return field.get_db_prep_value(value, connections[db], prepared=False)


def objects(
    key: Hashable, build: Callable[[], models.QuerySet[M]], params: Sequence[Any]
) -> list[M]:
    """The objects of ``build()`` (whose SQL, apart from ``params``, depends on ``key`` alone),
    read with the statement compiled the first time in this thread."""
    templates = _local.by_key
    if key not in templates:
        queryset = build()
        template = _template(queryset, params)
        if len(templates) >= LIMIT:
            templates.clear()
        templates[key] = template
        if template is None:
            return list(queryset)
    template = templates[key]
    if template is None:
        return list(build())
    with connections[template.db].cursor() as cursor:
        cursor.execute(template.sql, tuple(params))
        rows = cursor.fetchall()
    return [_instance(template, row) for row in template.compiler.results_iter([rows])]


def update(
    key: Hashable,
    build: Callable[[], tuple[models.QuerySet[Any], dict[str, Any]]],
    params: Sequence[Any],
) -> int:
    """Run ``queryset.update(**values)`` for ``(queryset, values) = build()`` with the UPDATE
    compiled the first time in this thread (``key`` fixes its shape: a value of ``None``
    compiles to ``NULL``, callers put that in the key); ``params`` are the statement's, the
    SET values first, then the WHERE's. Returns the count of rows changed. A statement whose
    parameters differ from the ORM's own at its first compilation runs through the ORM."""
    templates = _local.updates
    if key not in templates:
        queryset, values = build()
        sql, compiled = _update_sql(queryset, values)
        if len(templates) >= LIMIT:
            templates.clear()
        templates[key] = (queryset.db, sql) if sql and tuple(compiled) == tuple(params) else None
    template = templates[key]
    if template is None:
        queryset, values = build()
        return queryset.update(**values)
    db, sql = template
    with connections[db].cursor() as cursor:
        cursor.execute(sql, tuple(params))
        return cursor.rowcount


def update_returning(
    key: Hashable,
    build: Callable[[], tuple[models.QuerySet[M], dict[str, Any]]],
    params: Sequence[Any],
    fields: Sequence[str],
) -> list[M] | None:
    """``update`` that also reads back, in the same statement (``RETURNING``), the ``fields``
    of the rows it changed: instances of the queryset's model with only those loaded, in no
    particular order. One statement and one round trip instead of an UPDATE and a read. None
    where it cannot (a database without ``RETURNING`` in an UPDATE, or the statement did not
    compile to ``params``): nothing was run, the caller updates and reads instead."""
    templates = _local.returning
    if key not in templates:
        queryset, values = build()
        connection = connections[queryset.db]
        template: _Returning | None = None
        # PostgreSQL, and SQLite from 3.35 (Django's flag for INSERT ... RETURNING: the same
        # versions return from an UPDATE).
        if connection.features.can_return_columns_from_insert:
            sql, compiled = _update_sql(queryset, values)
            if sql and tuple(compiled) == tuple(params):
                table = queryset.model._meta.db_table
                columns = [_field(queryset.model, name).get_col(table) for name in fields]
                quoted = ", ".join(connection.ops.quote_name(c.target.column) for c in columns)
                # The ORM's compiler converts the returned values as it converts a read's.
                compiler = queryset.query.get_compiler(queryset.db)
                template = _Returning(
                    db=queryset.db,
                    sql=f"{sql} RETURNING {quoted}",
                    model=queryset.model,
                    names=[column.target.attname for column in columns],
                    compiler=compiler,
                    converters=compiler.get_converters(columns),
                )
        if len(templates) >= LIMIT:
            templates.clear()
        templates[key] = template
    template = templates[key]
    if template is None:
        return None
    connection = connections[template.db]
    with connection.cursor() as cursor:
        cursor.execute(template.sql, tuple(params))
        rows = cursor.fetchall()
    converted = template.compiler.apply_converters(rows, template.converters)
    return [template.model.from_db(template.db, template.names, row) for row in converted]


def _update_sql(queryset: models.QuerySet[Any], values: dict[str, Any]) -> tuple[str, Any]:
    """The SQL and parameters Django's compiler makes for ``queryset.update(**values)``."""
    query = queryset.query.chain(UpdateQuery)
    assert isinstance(query, UpdateQuery)
    query.add_update_values(values)
    return query.get_compiler(queryset.db).as_sql()


@dataclass(frozen=True)
class _Returning:
    db: str
    sql: str
    model: Any
    names: list[str]
    compiler: Any
    converters: dict[int, tuple[list[Any], Any]]


def _template(queryset: models.QuerySet[Any], params: Sequence[Any]) -> _Template | None:
    plain = (
        queryset._iterable_class is ModelIterable
        and not queryset._prefetch_related_lookups  # type: ignore[attr-defined]
        and not queryset._known_related_objects  # type: ignore[attr-defined]
        and not queryset.query.annotation_select
    )
    if not plain:
        return None
    compiler = queryset.query.get_compiler(using=queryset.db)
    sql, compiled = compiler.as_sql()
    if not sql or tuple(compiled) != tuple(params) or compiler.has_extra_select:
        return None
    klass_info = compiler.klass_info
    assert klass_info is not None
    fields = klass_info["select_fields"]
    start, end = fields[0], fields[-1] + 1
    return _Template(
        db=queryset.db,
        sql=sql,
        compiler=compiler,
        init_list=[column[0].target.attname for column in compiler.select[start:end]],
        start=start,
        end=end,
        populators=get_related_populators(klass_info, compiler.select, queryset.db),
    )


def _instance(template: _Template, row: Sequence[Any]) -> Any:
    model = template.compiler.klass_info["model"]  # type: ignore[index]
    obj = model.from_db(template.db, template.init_list, row[template.start : template.end])
    for populator in template.populators:
        populator.populate(row, obj)
    return obj


def clear() -> None:
    """Forget this thread's statements (tests)."""
    _local.by_key.clear()
    _local.updates.clear()
    _local.returning.clear()
