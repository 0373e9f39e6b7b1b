"""Posting to a callback: its token is the credential, in the path, the body or a header.

`POST /api/callbacks/{token}/` (the token in the URL) and `POST /api/callbacks/` (the token as
`"token"` in the body or in `Authorization: Bearer <token>`, which keeps it out of access
logs). A signed-in user may post too: the run's log then records who (`by`).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from api.authentication import OptionalUserAuthentication
from api.serializers import (
    CallbackPostSerializer,
    CallbackReceiptSerializer,
    CallbackTokenPostSerializer,
)
from api.throttling import CallbackRateThrottle
from api.views.docs import errors
from runtime.access import actor_of
from runtime.core.clock import Clock, SystemClock
from runtime.services import post_callback

SUMMARY = 'Post {"result": ...}, {"error": {"type", "message"}} or {"heartbeat": true}'


class _CallbackPost(GenericAPIView[Any]):
    authentication_classes = [OptionalUserAuthentication]
    permission_classes = [AllowAny]
    throttle_classes = [CallbackRateThrottle]
    throttle_scope = "callbacks"
    clock: Clock = SystemClock()  # the time heartbeats count from; tests swap in a FakeClock

    def _post(self, request: Request, token: str, data: dict[str, Any]) -> Response:
        options: dict[str, Any] = {"heartbeat": bool(data.get("heartbeat"))}
        if "result" in data:
            options["result"] = data["result"]
        if "error" in data:
            options["error"] = dict(data["error"])
        by = actor_of(request.user)
        receipt = post_callback(token, clock=self.clock, by=by, **options)
        return Response(CallbackReceiptSerializer(receipt).data)


class CallbackView(_CallbackPost):
    serializer_class = CallbackPostSerializer

    @extend_schema(
        operation_id="callbacks_post",
        auth=[],
        parameters=[OpenApiParameter("token", OpenApiTypes.STR, OpenApiParameter.PATH)],
        request=CallbackPostSerializer,
        responses={200: CallbackReceiptSerializer, **errors(400, 404, 409, 413, 415, 429)},
        summary=SUMMARY + " (the token in the path)",
    )
    def post(self, request: Request, token: str) -> Response:
        body = CallbackPostSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return self._post(request, token, body.validated_data)


class CallbackTokenView(_CallbackPost):
    serializer_class = CallbackTokenPostSerializer

    @extend_schema(
        operation_id="callbacks_post_token",
        auth=[],
        parameters=[
            OpenApiParameter(
                "Authorization",
                OpenApiTypes.STR,
                OpenApiParameter.HEADER,
                description="`Bearer <token>`, unless the body holds the token",
            )
        ],
        request=CallbackTokenPostSerializer,
        responses={200: CallbackReceiptSerializer, **errors(400, 404, 409, 413, 415, 429)},
        summary=SUMMARY + " (the token in the body or a Bearer header)",
    )
    def post(self, request: Request) -> Response:
        body = CallbackTokenPostSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        token = data.get("token") or _bearer(request)
        if not token:
            raise ValidationError(
                {"token": 'give the callback token as "token" or in Authorization: Bearer'}
            )
        return self._post(request, token, data)


def _bearer(request: Request) -> str | None:
    scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return credential.strip() or None
