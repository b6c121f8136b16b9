"""What every API view of checks, audits and streams shares: the tier redaction of answers,
the text field, serializers built once, the body and upload guards, the detection throttles."""

from __future__ import annotations

import copy
import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.core.cache import cache
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.serializer_helpers import BindingDict
from rest_framework.validators import ProhibitSurrogateCharactersValidator
from rest_framework.views import APIView

from provenance.accounts.selectors import is_auditor, teams_memoized
from provenance.cache import counter_hold, counter_release
from provenance.checks import tiers
from provenance.checks.models import Check, Status
from provenance.errors import PayloadTooLarge
from provenance.keys.selectors import owned_key_ids
from provenance.throttling import UserAndDetectionThrottle


class TieredApi(APIView):
    """Answers of a basic-tier team go through ``tiers.redact`` (see provenance.checks.tiers).
    The caller's team is read once per request (each query costs about as much CPU as
    scoring a short text)."""

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        with teams_memoized():
            return super().dispatch(request, *args, **kwargs)

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(response, Response) and response.status_code < 400:
            if not is_auditor(request.user):
                response.data = tiers.redact(response.data)
            else:
                response.data = _exact_for_owned(request.user, response.data)
        return super().finalize_response(request, response, *args, **kwargs)


def _exact_for_owned(user: Any, data: Any) -> Any:
    """An auditor's answer with everything about a key its team does not own redacted as
    for the basic tier (``exact_for``): a check names its keys in its hypotheses (a summary
    without them is looked up by id), a hypothesis or a span its ``key_id``."""
    owned = owned_key_ids(user) or set()
    items = list(_dicts(data))
    bare = [
        _uuid(item.get("id"))
        for item in items
        if "hypotheses" not in item and "key_id" not in item and "log10_p" in item and "id" in item
    ]
    stored: dict[Any, list[Any]] = {}
    if bare:
        stored = dict(Check.objects.filter(id__in=bare).values_list("id", "key_ids"))
    foreign: set[int] = set()
    for item in items:
        if isinstance(item.get("hypotheses"), list):
            key_ids = [h.get("key_id") for h in item["hypotheses"] if isinstance(h, dict)]
        elif "key_id" in item:
            key_ids = [item["key_id"]]
        elif "log10_p" in item and "id" in item:  # a check's summary, named by its id
            key_ids = stored.get(_uuid(item.get("id")), [None])
        else:
            continue
        if not {str(key_id) for key_id in key_ids} <= owned:
            foreign.add(id(item))
    return _redact_marked(data, foreign) if foreign else data


def _dicts(data: Any) -> Iterator[dict[str, Any]]:
    if isinstance(data, list):
        for item in data:
            yield from _dicts(item)
    elif isinstance(data, dict):
        yield data
        for value in data.values():
            yield from _dicts(value)


def _redact_marked(data: Any, foreign: set[int]) -> Any:
    if isinstance(data, list):
        return [_redact_marked(item, foreign) for item in data]
    if isinstance(data, dict):
        if id(data) in foreign:
            return tiers.redact(data)
        return {key: _redact_marked(value, foreign) for key, value in data.items()}
    return data


def _uuid(value: Any) -> uuid.UUID | None:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except ValueError:
        return None


_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_surrogates(value: str) -> None:
    found = _SURROGATE.search(value)
    if found is not None:
        raise serializers.ValidationError(
            ProhibitSurrogateCharactersValidator.message.format(code_point=ord(found.group())),
            code=ProhibitSurrogateCharactersValidator.code,
        )


class TextField(serializers.CharField):
    """A text to check: must arrive as a JSON string (DRF would turn 5 into "5")."""

    def __init__(self, **kwargs: Any):
        super().__init__(allow_blank=True, trim_whitespace=False, **kwargs)
        # DRF's surrogate check walks the text in Python, a generator step per character; the
        # same check, message and code in one regular-expression search.
        self.validators = [
            _no_surrogates if isinstance(v, ProhibitSurrogateCharactersValidator) else v
            for v in self.validators
        ]

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)

    default_error_messages = {"invalid": "text must be a string."}


class CappedListField(serializers.ListField):
    """A list whose length is checked before any element is read: past ``limit()`` items it
    is refused with 413 and ``message`` (formatted with ``limit`` and ``got``), so a body of a
    million items costs one ``len`` rather than a million element checks."""

    def __init__(self, *, limit: Callable[[], int], message: str, **kwargs: Any):
        self.limit = limit
        self.message = message
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> list[Any]:
        limit = self.limit()
        if isinstance(data, list | tuple) and len(data) > limit:
            raise PayloadTooLarge(self.message.format(limit=limit, got=len(data)))
        return super().to_internal_value(data)


class KeyIdsField(serializers.ListField):
    """``key_ids``: the keys to test, at most ``PROVENANCE_MAX_KEY_IDS`` UUIDs. The count is
    checked before any id is read, and a refusal names the limit, never the ids sent."""

    def __init__(self, **kwargs: Any):
        kwargs.setdefault("help_text", "the keys to test (default: every usable key)")
        super().__init__(
            child=serializers.UUIDField(),
            required=False,
            allow_empty=False,
            max_length=settings.PROVENANCE_MAX_KEY_IDS,
            **kwargs,
        )

    def to_internal_value(self, data: Any) -> list[Any]:
        limit = settings.PROVENANCE_MAX_KEY_IDS
        if isinstance(data, list | tuple) and len(data) > limit:
            raise serializers.ValidationError(f"name at most {limit} key ids", code="max_length")
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if isinstance(exc.detail, dict):  # one error per bad id: say it once
                raise serializers.ValidationError("key ids must be UUIDs", code="invalid") from None
            raise


class FieldsOnce(serializers.ModelSerializer):
    """A ModelSerializer that builds its fields from the model once per class, then gives
    each instance fresh ones made with the same arguments (what DRF's ``deepcopy`` of a
    declared field does, without copying arguments that no field changes): building them
    from the model, then deep-copying them, cost about a third of an inline check's request
    CPU. Only for serializers whose fields depend on nothing but their class."""

    _fields_once: dict[str, serializers.Field] | None = None  # read from each class's own

    def get_fields(self) -> dict[str, serializers.Field]:
        built = type(self).__dict__.get("_fields_once")
        if built is None:
            built = super().get_fields()  # never bound: only the fresh ones are
            type(self)._fields_once = built
        return {name: _fresh(field) for name, field in built.items()}


# An answer's serializer whose fields are built and bound once per class, on a prototype
# instance, and read by every instance made only to render (no ``data``, no ``context``):
# making and binding fresh fields for each answer cost about as much CPU as scoring its text.
# The shared fields are only read (``to_representation`` keeps no state in a field; a method
# field calls the prototype's method with the instance given), so threads may use them at
# once. An instance given ``data`` or a ``context`` builds its own. (A comment, not a
# docstring: the API schema describes the answers with the docstring they inherit.)
class OutputOnce(FieldsOnce):
    _prototype: OutputOnce | None = None  # read from each class's own
    _is_prototype = False

    @property  # type: ignore[override]  # DRF's is a cached_property; this one caches too
    def fields(self) -> Any:
        found = self.__dict__.get("_bound_fields")
        if found is None:
            found = self.__dict__["_bound_fields"] = self._bound_fields()
        return found

    def _bound_fields(self) -> Any:
        if self._is_prototype or self._context or hasattr(self, "initial_data"):
            bound = BindingDict(self)
            for name, field in self.get_fields().items():
                bound[name] = field
            return bound
        prototype = type(self).__dict__.get("_prototype")
        if prototype is None:
            prototype = type(self)()
            prototype._is_prototype = True
            prototype.fields  # noqa: B018  # built before any other thread sees it
            type(self)._prototype = prototype
        return prototype.fields


def _fresh(field: serializers.Field) -> serializers.Field:
    if isinstance(field, serializers.BaseSerializer):  # nested: its own fields are made anew
        return copy.deepcopy(field)
    return type(field)(*field._args, **field._kwargs)  # type: ignore[attr-defined]


DETECT_THROTTLES = [UserAndDetectionThrottle]


def body_size_guard(request: Request) -> None:
    # DRF parses the stream itself, bypassing Django's upload limit: enforce it here.
    length = int(request.META.get("CONTENT_LENGTH") or 0)
    if length > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        raise PayloadTooLarge(
            f"request body is {length} bytes; the limit is {settings.DATA_UPLOAD_MAX_MEMORY_SIZE}"
        )


FINISHED = (Status.DONE, Status.FAILED)


def wait_seconds(request: Request) -> float:
    """The ``?wait=`` of a submission: 0 (answer at once) unless asked for."""
    raw = request.query_params.get("wait", "0")
    try:
        wait = float(raw)
    except ValueError:
        wait = -1.0
    if not 0 <= wait <= settings.PROVENANCE_MAX_WAIT:  # also refuses nan
        raise serializers.ValidationError(
            {"wait": [f"wait must be a number of seconds from 0 to {settings.PROVENANCE_MAX_WAIT}"]}
        )
    return wait


@contextmanager
def waiting_slot(user: Any, wait: float) -> Iterator[float]:
    """The seconds this request may wait for a worker's verdict: ``wait``, unless the user
    already has ``PROVENANCE_MAX_WAITING_PER_USER`` requests waiting (counted in the shared
    cache, across processes), then 0: the check, already made and queued, is answered 202 at
    once, to be polled, so one account cannot hold every web thread with ``?wait=``. Taken
    only by a check that waits for the worker: one scored in the request holds its thread for
    the scoring of at most ``PROVENANCE_INLINE_MAX_BYTES``, like any other request."""
    if wait <= 0:
        yield 0.0
        return
    key = f"provenance:waiting:{user.pk}"
    # One round trip each way (provenance.cache.counter_hold); the expiry outlives any wait.
    held = counter_hold(cache, key, int(settings.PROVENANCE_MAX_WAIT) + 60)
    try:
        yield wait if held <= settings.PROVENANCE_MAX_WAITING_PER_USER else 0.0
    finally:
        counter_release(cache, key)


def read_upload(upload: Any) -> bytes:
    """An uploaded file's bytes, refused before reading when larger than any document or
    archive may be (the body guard bounds it too)."""
    limit = max(settings.PROVENANCE_MAX_DOCUMENT_BYTES, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
    if upload.size is not None and upload.size > limit:
        raise PayloadTooLarge(f"the file is {upload.size} bytes; the limit is {limit}")
    return bytes(upload.read())
