"""Schedules: list them, pause and resume them."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from api.serializers import ScheduleSerializer
from api.views.docs import AUTH_ERRORS, errors
from runtime.access import check_schedule_change
from runtime.models import Schedule
from runtime.schedules import pause_schedule, resume_schedule, sync_schedules

WORKFLOW = OpenApiParameter("workflow", OpenApiTypes.STR, OpenApiParameter.PATH)


class ScheduleListView(GenericAPIView[Any]):
    serializer_class = ScheduleSerializer
    pagination_class = None

    @extend_schema(
        operation_id="schedules_list",
        responses={200: ScheduleSerializer(many=True), **errors(*AUTH_ERRORS)},
        summary="Every schedule, with its last and next tick and whether it is paused",
    )
    def get(self, request: Request) -> Response:
        sync_schedules()  # the rows of schedules in code exist even before a worker started
        return Response(ScheduleSerializer(Schedule.objects.all(), many=True).data)


class SchedulePauseView(GenericAPIView[Any]):
    serializer_class = ScheduleSerializer

    @extend_schema(
        operation_id="schedules_pause",
        request=None,
        parameters=[WORKFLOW],
        responses={200: ScheduleSerializer, **errors(*AUTH_ERRORS, 404)},
        summary="Pause a schedule: no runs start until it is resumed (needs change_schedule)",
    )
    def post(self, request: Request, workflow: str) -> Response:
        check_schedule_change(request.user)
        return Response(ScheduleSerializer(pause_schedule(workflow)).data)


class ScheduleResumeView(GenericAPIView[Any]):
    serializer_class = ScheduleSerializer

    @extend_schema(
        operation_id="schedules_resume",
        request=None,
        parameters=[WORKFLOW],
        responses={200: ScheduleSerializer, **errors(*AUTH_ERRORS, 404)},
        summary="Resume a schedule from now; paused ticks are not caught up (change_schedule)",
    )
    def post(self, request: Request, workflow: str) -> Response:
        check_schedule_change(request.user)
        return Response(ScheduleSerializer(resume_schedule(workflow)).data)
