"""Approvals of an agent's tool calls (contract 2g): list a run's, decide one."""

from __future__ import annotations

import dataclasses
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from api.views.docs import AUTH_ERRORS, errors
from runtime.access.actors import actor_of
from runtime.access.permissions import run_to_change, visible_run
from runtime.agents.approvals import approvals, decide

RUN_ID = OpenApiParameter("run_id", OpenApiTypes.UUID, OpenApiParameter.PATH)
APPROVAL_ID = OpenApiParameter("approval_id", OpenApiTypes.UUID, OpenApiParameter.PATH)


class ApprovalSerializer(serializers.Serializer[Any]):
    id = serializers.CharField(help_text="the approval's id")
    tool_call_id = serializers.CharField()
    tool_name = serializers.CharField()
    arguments = serializers.JSONField(allow_null=True)
    asked_at = serializers.DateTimeField()
    approved = serializers.BooleanField(allow_null=True, help_text="null while pending")
    reason = serializers.CharField(allow_null=True)
    by = serializers.JSONField(allow_null=True, help_text="who decided")
    decided_at = serializers.DateTimeField(allow_null=True)


class DecisionSerializer(serializers.Serializer[Any]):
    approved = serializers.BooleanField()
    reason = serializers.CharField(max_length=2000, required=False, allow_null=True)


class RunApprovalsView(GenericAPIView[Any]):
    serializer_class = ApprovalSerializer
    pagination_class = None

    @extend_schema(
        operation_id="runs_approvals",
        parameters=[RUN_ID],
        responses={200: ApprovalSerializer(many=True), **errors(*AUTH_ERRORS, 404)},
        summary="The run's tool-call approvals, pending and decided, oldest first",
    )
    def get(self, request: Request, run_id: str) -> Response:
        run = visible_run(request.user, run_id)
        rows = [dataclasses.asdict(a) for a in approvals(run.id)]
        return Response(ApprovalSerializer(rows, many=True).data)


class RunApprovalView(GenericAPIView[Any]):
    serializer_class = DecisionSerializer

    @extend_schema(
        operation_id="runs_approval_decide",
        parameters=[RUN_ID, APPROVAL_ID],
        request=DecisionSerializer,
        responses={200: ApprovalSerializer, **errors(400, *AUTH_ERRORS, 404, 409)},
        summary="Approve or deny a tool call, once (409 if already decided); recorded with who",
    )
    def post(self, request: Request, run_id: str, approval_id: str) -> Response:
        run = run_to_change(request.user, run_id, action="deciding an approval of")
        body = DecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        approval = decide(
            run.id, approval_id, data["approved"], data.get("reason"), actor_of(request.user)
        )
        return Response(ApprovalSerializer(dataclasses.asdict(approval)).data)
