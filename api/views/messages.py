"""Messages, values and signals: `send`, `get_value` and `emit_signal` over HTTP."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from api.request_errors import InvalidQuery
from api.views.docs import AUTH_ERRORS, errors
from runtime.access.actors import actor_of
from runtime.access.permissions import CHANGE_RUN, run_to_change, visible_run
from runtime.core.errors import NotPermitted, ValueNotFound
from runtime.messaging.mailbox import send_message
from runtime.messaging.signals import emit
from runtime.messaging.values import get_value

RUN_ID = OpenApiParameter("run_id", OpenApiTypes.UUID, OpenApiParameter.PATH)
KEY = OpenApiParameter("key", OpenApiTypes.STR, OpenApiParameter.PATH)
MAX_VALUE_WAIT = 60.0  # seconds a value read may hold its request


class SendMessageSerializer(serializers.Serializer[Any]):
    topic = serializers.CharField(max_length=200, trim_whitespace=False)
    value = serializers.JSONField(allow_null=True)
    idempotency_key = serializers.CharField(
        max_length=255, required=False, allow_null=True, trim_whitespace=False
    )


class SentMessageSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(help_text="the message's id")
    created = serializers.BooleanField(help_text="false for a repeated idempotency key")


class ValueQuerySerializer(serializers.Serializer[Any]):
    wait = serializers.FloatField(
        required=False, min_value=0, max_value=MAX_VALUE_WAIT, help_text="seconds to wait"
    )


class ValueSerializer(serializers.Serializer[Any]):
    key = serializers.CharField()
    value = serializers.JSONField(allow_null=True)


class EmitSignalSerializer(serializers.Serializer[Any]):
    name = serializers.CharField(max_length=200, trim_whitespace=False)
    payload = serializers.JSONField(allow_null=True)
    idempotency_key = serializers.CharField(
        max_length=255, required=False, allow_null=True, trim_whitespace=False
    )


class EmittedSignalSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(help_text="the signal's id")
    delivered = serializers.IntegerField(help_text="how many waiting runs took it")
    created = serializers.BooleanField(help_text="false for a repeated idempotency key")


class RunMessagesView(GenericAPIView[Any]):
    serializer_class = SendMessageSerializer

    @extend_schema(
        operation_id="runs_send_message",
        parameters=[RUN_ID],
        request=SendMessageSerializer,
        responses={201: SentMessageSerializer, **errors(400, *AUTH_ERRORS, 404, 409, 413)},
        summary="Send a message to a run's mailbox (404 unknown run, 409 finished run)",
    )
    def post(self, request: Request, run_id: str) -> Response:
        # A message acts on the run: 404 / 403.
        run = run_to_change(request.user, run_id, action="sending messages to")
        body = SendMessageSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        sent = send_message(
            run.id,
            data["topic"],
            data["value"],
            idempotency_key=data.get("idempotency_key"),
            by=actor_of(request.user),
        )
        code = status.HTTP_201_CREATED if sent.created else status.HTTP_200_OK
        return Response({"id": sent.id, "created": sent.created}, status=code)


class RunValueView(GenericAPIView[Any]):
    serializer_class = ValueSerializer

    @extend_schema(
        operation_id="runs_value",
        parameters=[RUN_ID, KEY, ValueQuerySerializer],
        responses={200: ValueSerializer, **errors(400, *AUTH_ERRORS, 404)},
        summary="The latest value of a key set by the run (404 if none after the wait)",
    )
    def get(self, request: Request, run_id: str, key: str) -> Response:
        query = ValueQuerySerializer(data=request.query_params)
        if not query.is_valid():
            raise InvalidQuery(query.errors)
        wait = query.validated_data.get("wait")
        run = visible_run(request.user, run_id)  # another user's run is not found
        try:
            value = get_value(run.id, key, wait)
        except TimeoutError:
            raise ValueNotFound(f"the run set no value {key!r} within {wait} s") from None
        return Response({"key": key, "value": value})


class SignalsView(GenericAPIView[Any]):
    serializer_class = EmitSignalSerializer

    @extend_schema(
        operation_id="signals_emit",
        request=EmitSignalSerializer,
        responses={202: EmittedSignalSerializer, **errors(400, *AUTH_ERRORS, 413)},
        summary="Emit a signal to every run waiting for it with a matching match",
    )
    def post(self, request: Request) -> Response:
        if not request.user.has_perm(CHANGE_RUN):
            # A signal reaches every run waiting for it, whoever owns them: an operator's act.
            raise NotPermitted(f"emitting signals needs {CHANGE_RUN}")
        body = EmitSignalSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        emitted = emit(
            data["name"], data["payload"], data.get("idempotency_key"), actor_of(request.user)
        )
        result = {"id": emitted.id, "delivered": emitted.delivered, "created": emitted.created}
        return Response(result, status=status.HTTP_202_ACCEPTED)
