"""The API's bodies are allowlists, all the way down, read by one set of parsers.

Every API view parses its body with ``PARSERS`` (DRF's ``DEFAULT_PARSER_CLASSES``; no view
sets its own) and negotiates with ``BodyNegotiation`` (``DEFAULT_CONTENT_NEGOTIATION_CLASS``).
What a route accepts is what its OpenAPI operation declares (drf-spectacular's request
serializer for the method: ``extend_schema(request=...)``), so the documented schema and the
enforced allowlist are one declaration:

- a field the route does not declare is refused, at any depth (a field inside an audit item
  included), with 400 naming it (``texts[1].clientid``): never dropped in silence;
- a JSON object naming a key twice, or a form part sent twice for a field that is not a list,
  is refused (two readers of one body could otherwise disagree about what it said);
- a route that declares no body (``request=None``, every GET and DELETE) refuses a non-empty
  one, checked from its headers before authentication, so the body is never read whole;
- a media type the route does not declare is refused with 415;
- JSON nested past the decoder's depth is a 400, not a server error.

A client that misspells ``key_ids`` learns it at once instead of having every key tested, and
no field reaches the product unless it was declared on purpose."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.utils.datastructures import MultiValueDict
from rest_framework import parsers, serializers
from rest_framework.exceptions import ParseError, UnsupportedMediaType
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.utils.json import strict_constant

from provenance.errors import ProblemError

if TYPE_CHECKING:
    from rest_framework.request import Request

MAX_NAMED = 5  # unknown names listed in one answer; the rest are counted
NAMED_BODY_BYTES = 4096  # a body this small on a route that takes none is read to name its fields
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class BodyRefused(ProblemError):
    """A body the route does not take: 400, ``code`` ``invalid``, the message naming why."""


@dataclass(frozen=True)
class Field:
    many: bool  # a list: a JSON array, or a form part that may repeat
    nested: Body | None  # the declared fields of the object (or of each item); None: any


Body = Mapping[str, Field]
NO_BODY: Body = {}  # what a route that takes no body declares
ANY = None  # a declaration that is not a serializer (a raw schema): not checked here


def _body(declared: Any) -> Body | None:
    """The fields a serializer (class or instance) accepts, nested ones included."""
    if isinstance(declared, type) and issubclass(declared, serializers.BaseSerializer):
        declared = declared()
    if isinstance(declared, serializers.ListSerializer):
        declared = declared.child
    if not isinstance(declared, serializers.Serializer):
        return ANY
    return {name: _field(field) for name, field in declared.fields.items() if not field.read_only}


def _field(field: serializers.Field) -> Field:
    many = isinstance(field, serializers.ListField | serializers.ListSerializer)
    child = getattr(field, "child", None) if many else field
    nested = _body(child) if isinstance(child, serializers.Serializer) else None
    return Field(many=many, nested=nested)


@dataclass(frozen=True)
class Declared:
    """What one operation takes: a body per media type (``*``: any the parsers read)."""

    bodies: Mapping[str, Body | None]

    @property
    def takes_none(self) -> bool:
        return all(body is NO_BODY for body in self.bodies.values())

    def body(self, media_type: str) -> Body | None:
        if "*" in self.bodies:
            return self.bodies["*"]
        media = media_type.split(";")[0].strip().lower()
        if media not in self.bodies:
            raise UnsupportedMediaType(media, f"send {' or '.join(sorted(self.bodies))}")
        return self.bodies[media]


TAKES_NONE = Declared({"*": NO_BODY})
_declared: dict[tuple[type, str, str], Declared] = {}


def declared(view: Any) -> Declared:
    """What the view's operation for its request's method declares, worked out once per
    view class, action and method from the annotation that writes the OpenAPI schema
    (drf-spectacular's request serializer; GET, DELETE and the like take no body)."""
    # Imported here: DRF loads this module while its settings load, before its views exist.
    from drf_spectacular.plumbing import get_class
    from rest_framework.viewsets import ViewSetMixin

    method = view.request.method.upper()
    if method not in _BODY_METHODS:
        return TAKES_NONE
    name = getattr(view, "action", None) if isinstance(view, ViewSetMixin) else method.lower()
    handler = getattr(view, name, None) if name else None
    if handler is None:
        return TAKES_NONE  # answered 405 by the view
    key = (type(view), str(name), method)
    found = _declared.get(key)
    if found is None:
        schema_class = getattr(handler, "kwargs", {}).get("schema") or get_class(view.schema)
        schema = schema_class()
        schema.view = view
        schema.method = method
        request = schema.get_request_serializer()
        if isinstance(request, dict) and all("/" in str(media) for media in request):
            found = Declared({str(media): _declared_body(one) for media, one in request.items()})
        else:
            found = Declared({"*": _declared_body(request)})
        _declared[key] = found
    return found


def _declared_body(request: Any) -> Body | None:
    request = getattr(request, "request", request)  # an OpenApiRequest
    return NO_BODY if request is None else _body(request)


def _body_for(parser_context: Mapping[str, Any], media_type: str) -> Body | None:
    view = parser_context.get("view")
    if view is None or getattr(view, "request", None) is None:
        return ANY  # a parser used outside a view
    return declared(view).body(media_type)


def _names(names: list[str]) -> str:
    shown = ", ".join(repr(name[:60]) for name in names[:MAX_NAMED])
    more = len(names) - MAX_NAMED
    return shown + (f" and {more} more" if more > 0 else "")


def _refuse_unknown(names: list[str], body: Body) -> None:
    if not names:
        return
    if body is NO_BODY:
        raise BodyRefused(f"this route takes no body; got field(s): {_names(sorted(names))}")
    raise BodyRefused(f"unknown field(s): {_names(sorted(names))}")


def _unknown(data: Any, body: Body, at: str = "") -> Iterator[str]:
    """The names in ``data`` (an object or a list of objects) that ``body`` does not declare,
    with their path (``texts[1].clientid``); descends only into declared objects, so its
    depth is the declaration's, never the body's."""
    items = enumerate(data) if isinstance(data, list) else [(None, data)]
    for index, item in items:
        if not isinstance(item, Mapping):
            continue
        here = at if index is None else f"{at}[{index}]"
        for name, value in item.items():
            where = f"{here}.{name}" if here else str(name)
            field = body.get(name)
            if field is None:
                yield where
            elif field.nested is not None:
                yield from _unknown(value, field.nested, where)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, value in pairs:
        if name in found:
            raise BodyRefused(f"duplicate key {name[:60]!r} in the JSON body")
        found[name] = value
    return found


class JSONParser(parsers.JSONParser):
    """JSON whose objects name each key once, checked against the route's declaration."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        parser_context = parser_context or {}
        encoding = parsers.get_encoding(parser_context)  # type: ignore[attr-defined]
        try:
            text = stream.read().decode(encoding)
            data = json.loads(
                text,
                object_pairs_hook=_no_duplicates,
                parse_constant=strict_constant if self.strict else None,
            )
        except BodyRefused:
            raise
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply") from None
        except ValueError as exc:  # malformed JSON or text (UnicodeDecodeError)
            raise ParseError(f"JSON parse error - {exc}") from None
        body = _body_for(parser_context, media_type or self.media_type)
        if body is not ANY:
            _refuse_unknown(list(_unknown(data, body)), body)
        return data


def _check_form(parsed: Any, parser_context: Any, media_type: str) -> None:
    """A form's parts: each a declared field (``name``, or for a list ``name[i]`` and, for a
    list of objects, ``name[i]field`` with ``field`` one the item declares), sent once unless
    the field is a list."""
    body = _body_for(parser_context or {}, media_type)
    if body is ANY:
        return
    unknown: list[str] = []
    parts: list[MultiValueDict] = [parsed.data, parsed.files]
    for values in parts:
        for name in values:
            base = name.split("[", 1)[0]
            field = body.get(base)
            if field is None or (base != name and not _form_item(field, name[len(base) :])):
                unknown.append(name)
            elif not field.many and len(values.getlist(name)) > 1:
                raise BodyRefused(f"duplicate field {name[:60]!r} in the form")
    _refuse_unknown(sorted(unknown), body)


_FORM_ITEM = re.compile(r"\[[0-9]+\](.*)", re.DOTALL)


def _form_item(field: Field, rest: str) -> bool:
    """Whether a list field's part ``name[...]`` names one of its items as DRF reads a form
    (``parse_html_list``): ``texts[0]`` an item, ``texts[0]text`` a declared field of it."""
    found = _FORM_ITEM.fullmatch(rest) if field.many else None
    if found is None:
        return False
    key = found.group(1)
    return key == "" if field.nested is None else key in field.nested


class MultiPartParser(parsers.MultiPartParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        parsed = super().parse(stream, media_type, parser_context)
        _check_form(parsed, parser_context, media_type or self.media_type)
        return parsed


class FormParser(parsers.FormParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        data = super().parse(stream, media_type, parser_context)
        parsed: Any = parsers.DataAndFiles(data, MultiValueDict())
        _check_form(parsed, parser_context, media_type or self.media_type)
        return data


PARSERS = (JSONParser, FormParser, MultiPartParser)


class BodyNegotiation(DefaultContentNegotiation):
    """DRF's negotiation, which runs first on every API request, also refuses content the
    route does not take: where its operation declares no body, a body that holds anything
    (an empty JSON object or an empty form holds nothing). Up to ``NAMED_BODY_BYTES`` it is
    read, to name the fields; a larger one is refused unread, before authentication."""

    def select_renderer(
        self, request: Request, renderers: Any, format_suffix: str | None = None
    ) -> Any:
        chosen = super().select_renderer(request, renderers, format_suffix)
        view = request.parser_context.get("view")
        length = _content_length(request)
        if length and view is not None and declared(view).takes_none:
            request.accepted_renderer, request.accepted_media_type = chosen
            if length > NAMED_BODY_BYTES:
                raise BodyRefused(f"this route takes no body; got {length} bytes")
            data = request.data  # the parser refuses any field, naming it
            if data is not None and not (isinstance(data, Mapping) and not data):
                raise BodyRefused("this route takes no body")
        return chosen


def _content_length(request: Request) -> int:
    try:
        return max(0, int(request.META.get("CONTENT_LENGTH") or 0))
    except ValueError:
        return 0


def request_bodies_closed(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> Any:
    """drf-spectacular postprocessing hook: the schema says what the parsers enforce. Every
    object a request body declares, nested ones included, allows no other property
    (``additionalProperties: false``), so a client generated from the schema, or a fuzzer
    reading it, knows that an undeclared field is refused."""
    components = result.get("components", {}).get("schemas", {})
    closed: set[str] = set()

    def close(schema: Any) -> None:
        if not isinstance(schema, dict):
            return
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            name = ref.rsplit("/", 1)[-1]
            if name not in closed:
                closed.add(name)
                close(components.get(name))
            return
        if "properties" in schema:
            schema.setdefault("additionalProperties", False)
            for each in schema["properties"].values():
                close(each)
        close(schema.get("items"))
        for each in schema.get("allOf", []) + schema.get("oneOf", []) + schema.get("anyOf", []):
            close(each)

    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if isinstance(operation, dict):
                for content in operation.get("requestBody", {}).get("content", {}).values():
                    close(content.get("schema"))
    return result
