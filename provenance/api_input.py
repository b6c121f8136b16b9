"""The API's bodies are allowlists: a field no serializer declares is refused (400 naming it),
never silently dropped. A client that misspells ``key_ids`` learns it at once instead of
having every key tested, and no field reaches the product unless it was opened on purpose."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

MAX_NAMED = 5  # unknown names listed in one answer; the rest are counted


class StrictInput(serializers.Serializer):
    """A request body's serializer that refuses any field it does not declare."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            unknown = sorted(str(name) for name in data if name not in self.fields)
            if unknown:
                shown = ", ".join(repr(name[:40]) for name in unknown[:MAX_NAMED])
                more = len(unknown) - MAX_NAMED
                message = f"unknown field(s): {shown}" + (f" and {more} more" if more > 0 else "")
                raise serializers.ValidationError({"non_field_errors": [message]})
        return super().to_internal_value(data)
