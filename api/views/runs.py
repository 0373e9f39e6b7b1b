"""Runs: start, list, inspect (steps, events) and cancel."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from api.includes import EVENT_PARTS, RUN_PARTS, STEP_PARTS, include_parameter, requested
from api.pagination import (
    AfterPagination,
    EventPagination,
    RunCursorPagination,
    StepPagination,
)
from api.run_filters import (
    PARENT_PARAMETER,
    SEARCH_PARAMETER,
    RunFilterSerializer,
    filtered_runs,
)
from api.serializers import (
    EventSerializer,
    RunDetailSerializer,
    RunSummarySerializer,
    StartRunSerializer,
    StepSummarySerializer,
)
from api.views.docs import AUTH_ERRORS, errors
from runtime import selectors
from runtime.access import actor_of, check_start, run_to_change, visible_run, visible_runs
from runtime.services import cancel_run, start_run

RUN_ID = OpenApiParameter("run_id", OpenApiTypes.UUID, OpenApiParameter.PATH)


class RunListView(GenericAPIView[Any]):
    pagination_class = RunCursorPagination
    serializer_class = RunSummarySerializer

    @extend_schema(
        operation_id="runs_list",
        parameters=[
            RunFilterSerializer,
            PARENT_PARAMETER,
            SEARCH_PARAMETER,
            include_parameter(RUN_PARTS),
        ],
        responses={200: RunSummarySerializer(many=True), **errors(400, *AUTH_ERRORS)},
        summary="List the runs you may see, newest first, by workflow, status, times, owner, "
        "parent, source run and search attributes (input, result, error with ?include=)",
    )
    def get(self, request: Request) -> Response:
        include = requested(request, RUN_PARTS)
        runs = visible_runs(request.user, filtered_runs(request))
        with selectors.lagging_reads():
            page = self.paginate_queryset(runs) or []
            search = selectors.search_attributes([run.id for run in page])
            context = {"include": include, "search": search}
            rows = RunSummarySerializer(page, many=True, context=context).data
        return self.get_paginated_response(_within_budget(self, rows))

    @extend_schema(
        operation_id="runs_start",
        request=StartRunSerializer,
        responses={
            201: RunDetailSerializer,
            200: RunDetailSerializer,
            **errors(400, *AUTH_ERRORS, 409, 413, 415),
        },
        summary="Start a run (200 with your run for a repeated idempotency key, 409 if its "
        "arguments differ)",
    )
    def post(self, request: Request) -> Response:
        body = StartRunSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        workflow = check_start(request.user, data["workflow"])
        run, created = start_run(
            workflow,
            data["args"],
            data["kwargs"],
            idempotency_key=data.get("idempotency_key"),
            concurrency_key=data.get("concurrency_key") or None,
            priority=data["priority"],
            owner=request.user,
            search=data.get("search"),
        )
        return Response(RunDetailSerializer(run).data, status=201 if created else 200)


class RunDetailView(GenericAPIView[Any]):
    serializer_class = RunDetailSerializer

    @extend_schema(
        operation_id="runs_retrieve",
        parameters=[RUN_ID],
        responses={200: RunDetailSerializer, **errors(*AUTH_ERRORS, 404)},
        summary="One run, with its result or error and step counts by status",
    )
    def get(self, request: Request, run_id: str) -> Response:
        run = visible_run(request.user, run_id)
        with selectors.lagging_reads(fresh_as=run):
            return Response(RunDetailSerializer(run).data)


class RunStepsView(GenericAPIView[Any]):
    pagination_class = StepPagination
    serializer_class = StepSummarySerializer

    @extend_schema(
        operation_id="runs_steps",
        parameters=[RUN_ID, include_parameter(STEP_PARTS)],
        responses={200: StepSummarySerializer(many=True), **errors(400, *AUTH_ERRORS, 404)},
        summary="A run's steps by position (?after=POSITION pages on; ?include= adds input...)",
    )
    def get(self, request: Request, run_id: str) -> Response:
        include = requested(request, STEP_PARTS)
        run = visible_run(request.user, run_id)
        with selectors.lagging_reads(fresh_as=run):
            page = self.paginate_queryset(selectors.run_steps(run.id))
            rows = StepSummarySerializer(page, many=True, context={"include": include}).data
        return self.get_paginated_response(_within_budget(self, rows))


class RunEventsView(GenericAPIView[Any]):
    pagination_class = EventPagination
    serializer_class = EventSerializer

    @extend_schema(
        operation_id="runs_events",
        parameters=[RUN_ID, include_parameter(EVENT_PARTS)],
        responses={200: EventSerializer(many=True), **errors(400, *AUTH_ERRORS, 404)},
        summary="A run's events after ?after=SEQ, for tailing (payloads with ?include=payload)",
    )
    def get(self, request: Request, run_id: str) -> Response:
        include = requested(request, EVENT_PARTS)
        run = visible_run(request.user, run_id)
        with selectors.lagging_reads(fresh_as=run):
            page = self.paginate_queryset(selectors.run_events(run.id))
            rows = EventSerializer(page, many=True, context={"include": include}).data
        return self.get_paginated_response(_within_budget(self, rows))


class RunCancelView(GenericAPIView[Any]):
    serializer_class = RunDetailSerializer

    @extend_schema(
        operation_id="runs_cancel",
        parameters=[RUN_ID],
        request=None,
        responses={200: RunDetailSerializer, **errors(*AUTH_ERRORS, 404, 409)},
        summary="Cancel a run (409 if it has already finished; recorded with who cancelled)",
    )
    def post(self, request: Request, run_id: str) -> Response:
        run = run_to_change(request.user, run_id)
        return Response(RunDetailSerializer(cancel_run(run.id, by=actor_of(request.user))).data)


def _within_budget(view: GenericAPIView[Any], rows: Any) -> list[Any]:
    paginator = view.paginator
    if not isinstance(paginator, RunCursorPagination | AfterPagination):
        raise TypeError("a list view pages with RunCursorPagination or AfterPagination")
    return paginator.within_budget(list(rows))
