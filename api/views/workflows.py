"""The registered workflows."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from api.serializers import WorkflowSerializer
from api.views.docs import AUTH_ERRORS, errors
from runtime.selectors import registered_workflows


class WorkflowListView(GenericAPIView[Any]):
    serializer_class = WorkflowSerializer
    pagination_class = None

    @extend_schema(
        operation_id="workflows_list",
        responses={200: WorkflowSerializer(many=True), **errors(*AUTH_ERRORS)},
        summary="Registered workflows and their parameters",
    )
    def get(self, request: Request) -> Response:
        return Response(WorkflowSerializer(registered_workflows(), many=True).data)
