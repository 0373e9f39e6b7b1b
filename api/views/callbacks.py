"""Posting to a callback: the token in the URL is the credential."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.generics import GenericAPIView
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from api.serializers import CallbackPostSerializer, CallbackReceiptSerializer
from api.throttling import CallbackRateThrottle
from api.views.docs import errors
from runtime.core.clock import Clock, SystemClock
from runtime.services import post_callback


class CallbackView(GenericAPIView[Any]):
    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    throttle_classes = [CallbackRateThrottle]
    throttle_scope = "callbacks"
    serializer_class = CallbackPostSerializer
    clock: Clock = SystemClock()  # the time heartbeats count from; tests swap in a FakeClock

    @extend_schema(
        operation_id="callbacks_post",
        auth=[],
        parameters=[OpenApiParameter("token", OpenApiTypes.STR, OpenApiParameter.PATH)],
        request=CallbackPostSerializer,
        responses={200: CallbackReceiptSerializer, **errors(400, 404, 409, 413, 415, 429)},
        summary='Post {"result": ...}, {"error": {"type", "message"}} or {"heartbeat": true}',
    )
    def post(self, request: Request, token: str) -> Response:
        body = CallbackPostSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        options: dict[str, Any] = {"heartbeat": bool(data.get("heartbeat"))}
        if "result" in data:
            options["result"] = data["result"]
        if "error" in data:
            options["error"] = dict(data["error"])
        receipt = post_callback(token, clock=self.clock, **options)
        return Response(CallbackReceiptSerializer(receipt).data)
