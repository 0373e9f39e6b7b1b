"""Pagination: a cursor over runs (newest first) and `?after=` cursors for steps and events.

Every page also stops early once its serialized rows pass FANFOLD_API_PAGE_BYTES (always
keeping one row), and its `next` link goes on from the last row it kept.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.db.models import QuerySet
from django.utils.dateparse import parse_datetime
from rest_framework.exceptions import NotFound
from rest_framework.pagination import BasePagination, CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.encoders import JSONEncoder
from rest_framework.utils.urls import replace_query_param

from api.request_errors import InvalidQuery
from runtime import conf


def rows_within_budget(data: Sequence[Any]) -> int:
    """How many of these serialized rows, from the first, fit in FANFOLD_API_PAGE_BYTES (at
    least one, so that a page always moves on)."""
    budget = conf.get().API_PAGE_BYTES
    used = 0
    for count, row in enumerate(data):
        used += len(json.dumps(row, cls=JSONEncoder, ensure_ascii=False).encode())
        if used > budget:
            return max(count, 1)
    return len(data)


class RunCursorPagination(CursorPagination):
    ordering = ("-created_at", "-id")
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500

    def within_budget(self, data: list[Any]) -> list[Any]:
        """The first rows of the serialized page that fit the byte budget; the links follow."""
        reverse = bool(self.cursor and self.cursor.reverse)
        # A page read backwards (a `previous` link) keeps the rows nearest its cursor: its end.
        ordered = data[::-1] if reverse else data
        keep = rows_within_budget(ordered)
        page = self.page or []
        if keep == len(data) or len(page) != len(data):
            return data
        # DRF's links start from the position of the row after the page: the first one cut.
        if reverse:
            cut = page[-keep - 1]
            self.previous_position = self._get_position_from_instance(cut, self.ordering)
            self.page, self.has_previous = page[-keep:], True
            return data[-keep:]
        self.next_position = self._get_position_from_instance(page[keep], self.ordering)
        self.page, self.has_next = page[:keep], True
        return data[:keep]

    def decode_cursor(self, request: Request) -> Any:
        try:
            cursor = super().decode_cursor(request)
        except NotFound:
            cursor = None
            forged = True
        else:
            # DRF checks a cursor's shape, not its position: "p=notadate" would reach the
            # query as a created_at and fail there.
            position = cursor.position if cursor is not None else None
            forged = position is not None and not _is_datetime(position)
            # A cursor this API hands out always carries an offset, a direction or a position;
            # junk ("AAAA", "====") decodes to none of them and would read as the first page.
            given = request.query_params.get(self.cursor_query_param)
            forged = forged or bool(given and cursor and cursor == (0, False, None))
        if forged:
            raise InvalidQuery({"cursor": ["not a cursor this API handed out"]})
        return cursor


class AfterPagination(BasePagination):
    """Rows whose `field` is greater than `?after=` (default 0), in order, `?limit=` at most.

    `next` links to the following page while there may be more; a tailing client polls with
    `after` set to the last value it saw.
    """

    field = "seq"
    default_limit = 100
    max_limit = 1000

    def __init__(self) -> None:
        self.next_after: int | None = None
        self.request: Request | None = None
        self.rows: list[Any] = []

    def paginate_queryset(
        self, queryset: QuerySet[Any] | Sequence[Any], request: Request, view: Any = None
    ) -> list[Any]:
        if not isinstance(queryset, QuerySet):
            raise TypeError("AfterPagination pages querysets")
        self.request = request
        after = _int_param(request, "after", 0, 0, None)
        limit = _int_param(request, "limit", self.default_limit, 1, self.max_limit)
        rows = list(
            queryset.filter(**{f"{self.field}__gt": after}).order_by(self.field)[: limit + 1]
        )
        more = len(rows) > limit
        rows = rows[:limit]
        self.next_after = getattr(rows[-1], self.field) if more else None
        self.rows = rows
        return rows

    def within_budget(self, data: list[Any]) -> list[Any]:
        """The first rows of the serialized page that fit the byte budget; `next` follows."""
        keep = rows_within_budget(data)
        if keep < len(data):
            self.next_after = getattr(self.rows[keep - 1], self.field)
        return data[:keep]

    def get_paginated_response(self, data: Any) -> Response:
        return Response({"next": self._next_link(), "results": data})

    def _next_link(self) -> str | None:
        if self.next_after is None or self.request is None:
            return None
        url = self.request.build_absolute_uri()
        return replace_query_param(url, "after", self.next_after)

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["next", "results"],
            "properties": {
                "next": {"type": "string", "nullable": True, "format": "uri"},
                "results": schema,
            },
        }

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": "after",
                "in": "query",
                "required": False,
                "description": f"only rows whose {self.field} is greater than this",
                "schema": {"type": "integer", "minimum": 0},
            },
            {
                "name": "limit",
                "in": "query",
                "required": False,
                "description": f"at most this many rows (default {self.default_limit})",
                "schema": {"type": "integer", "minimum": 1, "maximum": self.max_limit},
            },
        ]


class EventPagination(AfterPagination):
    field = "seq"


class StepPagination(AfterPagination):
    field = "position"


def _is_datetime(text: object) -> bool:
    try:
        return isinstance(text, str) and parse_datetime(text) is not None
    except ValueError:  # well formed but out of range, e.g. month 13
        return False


def _int_param(request: Request, name: str, default: int, low: int, high: int | None) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidQuery({name: ["must be an integer"]}) from None
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise InvalidQuery({name: [f"must be {bound}"]})
    return value
