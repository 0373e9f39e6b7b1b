"""`GET /api/runs/`'s filters: the query string read into `runtime.run_queries.run_query`.

Plain filters are checked by RunFilterSerializer (a 400 names the parameter); every
`search.<name>[__op]` parameter becomes one attribute condition, its text coerced to the
attribute's declared type (a 400 names the parameter too).
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.request import Request

from api.request_errors import InvalidQuery
from runtime.core.search import InvalidFilter
from runtime.models import Run
from runtime.run_queries import run_query

SEARCH_PREFIX = "search."
MAX_SEARCH_FILTERS = 10


class RunFilterSerializer(serializers.Serializer[Any]):
    workflow = serializers.CharField(max_length=200, required=False)
    status = serializers.CharField(
        max_length=200,
        required=False,
        help_text="one status or several, comma-separated: `running,waiting` (pending, "
        "running, waiting, completed, failed, cancelled)",
    )
    created_after = serializers.DateTimeField(required=False, help_text="ISO 8601, inclusive")
    created_before = serializers.DateTimeField(required=False, help_text="ISO 8601, exclusive")
    started_after = serializers.DateTimeField(required=False)
    started_before = serializers.DateTimeField(required=False)
    finished_after = serializers.DateTimeField(required=False)
    finished_before = serializers.DateTimeField(required=False)
    owner = serializers.IntegerField(required=False, min_value=1, help_text="a user id")
    forked_from = serializers.UUIDField(required=False, help_text="the forks of this run")
    task = serializers.CharField(
        max_length=255,
        required=False,
        help_text="the runs of the plain Django task at this dotted path (its runs' `task` "
        "search attribute)",
    )
    app_version = serializers.CharField(
        max_length=64, required=False, help_text="the runs pinned to this deployment version"
    )


# `parent` cannot be a serializer field (it would shadow Field.parent): checked by run_query.
PARENT_PARAMETER = OpenApiParameter(
    "parent", OpenApiTypes.UUID, OpenApiParameter.QUERY, description="the child runs of this run"
)
SEARCH_PARAMETER = OpenApiParameter(
    "search.{name}",
    OpenApiTypes.STR,
    OpenApiParameter.QUERY,
    description=(
        "A search attribute filter, one parameter per condition, all must hold: "
        "`search.customer=42` (equal), `search.amount__gte=100`, `search.amount__lte=500`, "
        "`search.region__in=eu,us` (any of, comma-separated), `search.region__contains=eu` "
        "(str only). The value is text coerced to the attribute's declared type (int, float, "
        "bool `true`/`false`, datetime ISO 8601 with a time zone, str); a name no workflow "
        "declares, an unknown operator or a value of the wrong type is a 400 naming the "
        f"parameter. At most {MAX_SEARCH_FILTERS}."
    ),
)


def filtered_runs(request: Request) -> QuerySet[Run]:
    """The runs the request's filters select (before the caller's permissions), newest
    first; InvalidQuery (400) naming a filter that cannot be used."""
    params = request.query_params
    plain = RunFilterSerializer(data=params)
    if not plain.is_valid():
        raise InvalidQuery(plain.errors)
    search = {
        key[len(SEARCH_PREFIX) :]: params[key] for key in params if key.startswith(SEARCH_PREFIX)
    }
    if len(search) > MAX_SEARCH_FILTERS:
        raise InvalidQuery({"search": [f"at most {MAX_SEARCH_FILTERS} search filters"]})
    for key in search:
        if len(params.getlist(SEARCH_PREFIX + key)) > 1:
            raise InvalidQuery({SEARCH_PREFIX + key: ["give each search filter once"]})
    try:
        parent = params.get("parent") or None
        return run_query(search=search, parent=parent, text=True, **plain.validated_data)
    except InvalidFilter as exc:
        raise InvalidQuery({exc.name: [exc.message]}) from None
