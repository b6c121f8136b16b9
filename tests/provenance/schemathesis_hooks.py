"""Checks the schemathesis run of tests/provenance/test_schemathesis.py adds to its own
(loaded through ``SCHEMATHESIS_HOOKS``): every body is an allowlist, read by one parser.

- ``undeclared_fields_refused``: a generated body holding a field the operation does not
  declare (the schema closes every request object with ``additionalProperties: false``, so
  the negative phases add such fields) is never accepted: 400 naming the field (or naming a
  query parameter generated wrong as well, checked first), or a refusal answered before the
  body is read (``BEFORE_THE_BODY``).
- ``duplicate_keys_refused``: every JSON object body the API read (accepted, or refused with
  400) is sent again with its first key repeated, a different value first and the sent one
  last (a parser where the last one wins reads the same body again); the answer must be 400
  naming the duplicate."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import requests
import schemathesis

# Refusals answered before a body is read: a multipart body without its proof of work
# (public verification), a body over its size or of a media type the route does not take.
BEFORE_THE_BODY = {403, 411, 413, 415}
TALLY = os.environ.get("PROVENANCE_SCHEMATHESIS_TALLY", "")  # a file: one line a case checked


def _tally(check: str, case: Any, status: int) -> None:
    if TALLY:
        with open(TALLY, "a", encoding="utf-8") as out:
            out.write(f"{check} {case.operation.method.upper()} {case.operation.path} {status}\n")


def _resolve(schema: Any, root: dict[str, Any]) -> Any:
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        node: Any = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def _undeclared(body: Any, schema: Any, root: dict[str, Any], at: str = "") -> Iterator[str]:
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        return
    if isinstance(body, dict) and "properties" in schema:
        for name, value in body.items():
            where = f"{at}.{name}" if at else str(name)
            if name not in schema["properties"]:
                yield where
            else:
                yield from _undeclared(value, schema["properties"][name], root, where)
    elif isinstance(body, list) and "items" in schema:
        for index, item in enumerate(body):
            yield from _undeclared(item, schema["items"], root, f"{at}[{index}]")


def _body_schema(case: Any) -> Any:
    root = case.operation.schema.raw_schema
    operation = root["paths"][case.operation.path][case.operation.method.lower()]
    content = operation.get("requestBody", {}).get("content", {})
    return root, content.get(case.media_type or "", {}).get("schema")


def _detail(response: Any) -> str:
    try:
        return str(response.json().get("detail", ""))
    except (ValueError, AttributeError):
        return ""


@schemathesis.check
def undeclared_fields_refused(ctx: Any, response: Any, case: Any) -> bool | None:
    root, schema = _body_schema(case)
    if schema is None or not isinstance(case.body, dict | list):
        return None
    if case.media_type == "application/json":
        undeclared = list(_undeclared(case.body, schema, root))
    else:  # a form's parts are names; a part's content is not an object the API reads
        properties = _resolve(schema, root).get("properties", {})
        undeclared = [name for name in case.body if name not in properties]
    if not undeclared:
        return None
    _tally("undeclared", case, response.status_code)
    if response.status_code in BEFORE_THE_BODY:
        return True
    detail = _detail(response)
    # The message names the first few, sorted; a leaf inside a declared object is named whole.
    # A query parameter generated wrong as well may be refused first (checked before the body).
    named = [name for name in undeclared if repr(name[:60]) in detail]
    assert response.status_code == 400 and (named or _refused_outside_the_body(case, detail)), (
        f"undeclared {undeclared[:5]} answered {response.status_code}: {detail[:300]}"
    )
    return True


def _refused_outside_the_body(case: Any, detail: str) -> bool:
    """Whether the refusal is about a part other than the body: schemathesis generated one
    against its schema, or the message names a query parameter the case sent (one checked
    before the body, such as ``wait`` or ``maxResults``)."""
    components = getattr(getattr(case, "meta", None), "components", None) or {}
    negative = any(
        str(getattr(location, "value", location)) != "body" and info.mode.is_negative
        for location, info in components.items()
    )
    return negative or any(str(name) in detail for name in (case.query or {}))


@schemathesis.check
def duplicate_keys_refused(ctx: Any, response: Any, case: Any) -> bool | None:
    if response.status_code not in (200, 201, 202, 400) or case.media_type != "application/json":
        return None  # refused before the body was read (401, 403, 413, 415, 429...)
    if not isinstance(case.body, dict) or not case.body:
        return None
    name = next(iter(case.body))
    first = json.dumps({name: "a different value"})[1:-1]
    raw = "{" + first + ", " + json.dumps(case.body)[1:]
    sent = response.request
    headers = {key: value for key, value in sent.headers.items() if key.lower() != "content-length"}
    again = requests.request(sent.method, sent.url, data=raw.encode(), headers=headers, timeout=30)
    detail = _detail(again)
    _tally("duplicate", case, again.status_code)
    named = "duplicate" in detail and repr(name[:60]) in detail
    # Refused for the repeated key; or, where the first answer was a 400 from before the body
    # was read (a bad query parameter), the same refusal.
    assert again.status_code == 400 and (named or detail == _detail(response)), (
        f"duplicate {name!r} answered {again.status_code}: {again.text[:300]}"
    )
    return True
