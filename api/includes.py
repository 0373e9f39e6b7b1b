"""`?include=`: list endpoints answer summaries, and payloads only when asked.

A run's or step's input and result, its error, and an event's payload may each be up to
FANFOLD_MAX_PAYLOAD_BYTES: a page of them could be hundreds of megabytes. List pages leave them
out unless `?include=` names them (comma-separated); one run alone always has them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request

from api.request_errors import InvalidQuery

# What each endpoint's `?include=` may name, and the fields each name brings.
RUN_PARTS: Mapping[str, tuple[str, ...]] = {
    "input": ("args", "kwargs"),
    "result": ("result",),
    "error": ("error",),
}
STEP_PARTS: Mapping[str, tuple[str, ...]] = {
    "input": ("input",),
    "result": ("result",),
    "error": ("error",),
}
EVENT_PARTS: Mapping[str, tuple[str, ...]] = {"payload": ("payload",)}


def requested(request: Request, parts: Mapping[str, tuple[str, ...]]) -> frozenset[str]:
    """The names `?include=` asks for, refusing any this endpoint does not know (400)."""
    raw = request.query_params.get("include") or ""
    names = frozenset(part.strip() for part in raw.split(",") if part.strip())
    unknown = sorted(names - set(parts))
    if unknown:
        known = ", ".join(parts)
        raise InvalidQuery({"include": [f"unknown {', '.join(unknown)}; known: {known}"]})
    return names


def left_out(parts: Mapping[str, tuple[str, ...]], context: Mapping[str, Any]) -> set[str]:
    """The field names a serializer drops for the `include` in its context (none without one:
    the OpenAPI document shows every field, as optional)."""
    include = context.get("include")
    if include is None:
        return set()
    return {field for name, fields in parts.items() if name not in include for field in fields}


def include_parameter(parts: Mapping[str, tuple[str, ...]]) -> OpenApiParameter:
    names = ", ".join(f"`{name}` ({', '.join(fields)})" for name, fields in parts.items())
    return OpenApiParameter(
        "include",
        OpenApiTypes.STR,
        description=f"comma-separated parts to add to each row: {names}; left out by default",
    )
