"""Updates over HTTP (contract section 2l): send one to a run and wait for its answer, read
one later by id, and update-with-start."""

from __future__ import annotations

import uuid
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
from runtime.access.permissions import check_start, run_to_change, visible_run
from runtime.core.errors import RunCancelled, RunFailed, RunFinished
from runtime.services import start_run
from runtime.store.messaging.updates import UpdateRow
from runtime.updates.calling import (
    accept_update,
    check_update_id,
    get_update,
    outcome,
    validated,
    wait_for_answer,
)

RUN_ID = OpenApiParameter("run_id", OpenApiTypes.UUID, OpenApiParameter.PATH)
UPDATE_ID = OpenApiParameter("update_id", OpenApiTypes.STR, OpenApiParameter.PATH)
MAX_UPDATE_WAIT = 60.0  # seconds a request may wait for the run's answer
DEFAULT_UPDATE_WAIT = 10.0


def _wait_field() -> serializers.FloatField:
    return serializers.FloatField(
        required=False, min_value=0, max_value=MAX_UPDATE_WAIT,
        help_text=f"seconds to wait for the answer (default {DEFAULT_UPDATE_WAIT:g}); "
        "202 if it has not come by then",
    )  # fmt: skip


class UpdateBodySerializer(serializers.Serializer[Any]):
    name = serializers.CharField(max_length=200, trim_whitespace=False)
    payload = serializers.JSONField(allow_null=True, required=False, default=None)
    update_id = serializers.CharField(
        max_length=255, required=False, allow_null=True, trim_whitespace=False,
        help_text="the same id again applies once and answers with the first reply",
    )  # fmt: skip


class SendUpdateSerializer(UpdateBodySerializer):
    wait = _wait_field()


class UpdateWithStartSerializer(serializers.Serializer[Any]):
    workflow = serializers.CharField(max_length=200, help_text="a registered workflow name")
    args = serializers.ListField(child=serializers.JSONField(), default=list)
    kwargs = serializers.DictField(child=serializers.JSONField(), default=dict)
    idempotency_key = serializers.CharField(
        max_length=255, help_text="names the run: started by the first call, updated by all"
    )
    update = UpdateBodySerializer(help_text="the update: name, payload, update_id")  # type: ignore[assignment]
    wait = _wait_field()


class UpdateAnswerSerializer(serializers.Serializer[Any]):
    update_id = serializers.CharField()
    status = serializers.ChoiceField(choices=["pending", "replied"])
    reply = serializers.JSONField(required=False, allow_null=True)


class UpdateStateSerializer(serializers.Serializer[Any]):
    update_id = serializers.CharField()
    name = serializers.CharField()
    payload = serializers.JSONField(allow_null=True)
    status = serializers.ChoiceField(choices=["pending", "replied", "rejected"])
    reply = serializers.JSONField(allow_null=True)
    reason = serializers.CharField(allow_null=True)


class UpdateQuerySerializer(serializers.Serializer[Any]):
    wait = serializers.FloatField(
        required=False, min_value=0, max_value=MAX_UPDATE_WAIT, help_text="seconds to wait"
    )


def _answer(rid: uuid.UUID, row: UpdateRow, wait: float) -> Response:
    """200 with the reply, 202 while pending; UpdateRejected (400) for a rejection, 409 if the
    run ended without answering."""
    if not row.answered:
        try:
            row = wait_for_answer(rid, row.id, wait)
        except TimeoutError:
            pending = {"update_id": row.id, "status": "pending"}
            return Response(pending, status=status.HTTP_202_ACCEPTED)
        except (RunFailed, RunCancelled) as exc:
            raise RunFinished(str(exc)) from None
    reply = outcome(row)  # raises UpdateRejected with the run's reason
    return Response({"update_id": row.id, "status": "replied", "reply": reply})


class RunUpdatesView(GenericAPIView[Any]):
    serializer_class = SendUpdateSerializer

    @extend_schema(
        operation_id="runs_send_update",
        parameters=[RUN_ID],
        request=SendUpdateSerializer,
        responses={
            200: UpdateAnswerSerializer,
            202: UpdateAnswerSerializer,
            **errors(400, *AUTH_ERRORS, 404, 409, 413, 422),
        },
        summary="Send an update to a run and wait for its reply (202 if the wait ends first; "
        "400 refused or undeclared, 409 finished, 422 the validator failed)",
    )
    def post(self, request: Request, run_id: str) -> Response:
        # An update acts on the run, as a message does: 404 / 403.
        run = run_to_change(request.user, run_id, action="sending updates to")
        body = SendUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        rid, row, _ = accept_update(
            run.id, data["name"], data["payload"], update_id=data.get("update_id"),
            by=actor_of(request.user),
        )  # fmt: skip
        return _answer(rid, row, data.get("wait", DEFAULT_UPDATE_WAIT))


class RunUpdateView(GenericAPIView[Any]):
    serializer_class = UpdateStateSerializer

    @extend_schema(
        operation_id="runs_update",
        parameters=[RUN_ID, UPDATE_ID, UpdateQuerySerializer],
        responses={200: UpdateStateSerializer, **errors(400, *AUTH_ERRORS, 404)},
        summary="One update of a run by id, waiting up to ?wait=S for its answer",
    )
    def get(self, request: Request, run_id: str, update_id: str) -> Response:
        query = UpdateQuerySerializer(data=request.query_params)
        if not query.is_valid():
            raise InvalidQuery(query.errors)
        run = visible_run(request.user, run_id)  # another user's run is not found
        found = get_update(run.id, check_update_id(update_id), query.validated_data.get("wait"))
        return Response({"update_id": found.id, "name": found.name, "payload": found.payload,
                         "status": found.status, "reply": found.reply,
                         "reason": found.reason})  # fmt: skip


class UpdateWithStartView(GenericAPIView[Any]):
    serializer_class = UpdateWithStartSerializer

    @extend_schema(
        operation_id="updates_with_start",
        request=UpdateWithStartSerializer,
        responses={
            200: UpdateAnswerSerializer,
            202: UpdateAnswerSerializer,
            **errors(400, *AUTH_ERRORS, 404, 409, 413, 422),
        },
        summary="Start a run unless the idempotency key names one, then send it an update",
    )
    def post(self, request: Request) -> Response:
        body = UpdateWithStartSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        update = data["update"]
        workflow = check_start(request.user, data["workflow"])
        # Refused before the start: a refused update starts nothing.
        name, payload = validated(workflow, update["name"], update["payload"])
        run, created = start_run(
            workflow, data["args"], data["kwargs"], idempotency_key=data["idempotency_key"],
            owner=request.user,
        )  # fmt: skip
        if not created:  # the key's run exists: the update acts on it
            run_to_change(request.user, run.id, action="sending updates to")
        rid, row, _ = accept_update(
            run.id, name, payload, update_id=update.get("update_id"),
            by=actor_of(request.user), checked_already=True,
        )  # fmt: skip
        answered = _answer(rid, row, data.get("wait", DEFAULT_UPDATE_WAIT))
        answered.data = {"run_id": str(rid), "created": created, **answered.data}
        return answered
