"""Fork and retry a run: a new run that copies the source's records before a position."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from api.serializers import ForkRunSerializer, RunDetailSerializer
from api.views.docs import AUTH_ERRORS, errors
from api.views.runs import RUN_ID
from runtime.access import actor_of, run_to_change
from runtime.forks import fork_run, retry_run


class RunForkView(GenericAPIView[Any]):
    serializer_class = RunDetailSerializer

    @extend_schema(
        operation_id="runs_fork",
        parameters=[RUN_ID],
        request=ForkRunSerializer,
        responses={201: RunDetailSerializer, **errors(400, *AUTH_ERRORS, 404, 409, 413, 415)},
        summary="Fork a run from a position (400 out of range, 409 after an unfinished step)",
    )
    def post(self, request: Request, run_id: str) -> Response:
        body = ForkRunSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        source = run_to_change(request.user, run_id)
        run = fork_run(
            source.id,
            data["from_position"],
            data.get("args"),
            data.get("kwargs"),
            by=actor_of(request.user),
        )
        return Response(RunDetailSerializer(run).data, status=201)


class RunRetryView(GenericAPIView[Any]):
    serializer_class = RunDetailSerializer

    @extend_schema(
        operation_id="runs_retry",
        parameters=[RUN_ID],
        request=None,
        responses={201: RunDetailSerializer, **errors(*AUTH_ERRORS, 404, 409)},
        summary="Fork a run from its first failed or cancelled step (409 if it has none)",
    )
    def post(self, request: Request, run_id: str) -> Response:
        source = run_to_change(request.user, run_id)
        run = retry_run(source.id, by=actor_of(request.user))
        return Response(RunDetailSerializer(run).data, status=201)
