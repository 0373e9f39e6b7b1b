"""A run's history: its steps (a callback step with its token) and its events."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from api.includes import EVENT_PARTS, STEP_PARTS, left_out
from runtime import conf
from runtime.core.callbacks import recover_token
from runtime.models import Event, Step
from runtime.models.states import SHOWN_STEP_STATUSES


class StepSerializer(serializers.ModelSerializer[Step]):
    callback_token = serializers.SerializerMethodField(
        help_text="a callback step's token, for whoever may see the run (null otherwise)"
    )
    input = serializers.JSONField(read_only=True, allow_null=True)
    result = serializers.JSONField(read_only=True, allow_null=True)
    error = serializers.JSONField(read_only=True, allow_null=True)
    # An open wait (a sleep, a callback, ctx.recv, a signal) reads `waiting`, as its run does.
    status = serializers.ChoiceField(
        choices=SHOWN_STEP_STATUSES, source="shown_status", read_only=True
    )

    class Meta:
        model = Step
        # The callback token is the credential of the callback endpoint: only views scoped to
        # runs the user may see (runtime.access) serialize steps. Only its digest is stored.
        fields = [
            "id",
            "position",
            "name",
            "kind",
            "status",
            "attempt",
            "input",
            "result",
            "error",
            "created_at",
            "started_at",
            "finished_at",
            "wake_at",
            "callback_token",
        ]
        read_only_fields = fields

    def get_callback_token(self, step: Step) -> str | None:
        if not step.callback_token:
            return None
        return recover_token(conf.token_secrets(), step.run_id, step.id, step.callback_token)


class StepSummarySerializer(StepSerializer):
    """A step in a list: its input, result and error only with `?include=`."""

    input = serializers.JSONField(required=False, allow_null=True)
    result = serializers.JSONField(required=False, allow_null=True)
    error = serializers.JSONField(required=False, allow_null=True)

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        for name in left_out(STEP_PARTS, self.context):
            fields.pop(name)
        return fields


class EventSerializer(serializers.ModelSerializer[Event]):
    step = serializers.UUIDField(source="step_id", read_only=True, allow_null=True)
    # Not read-only, so that the OpenAPI document shows it optional (?include=payload).
    payload = serializers.JSONField(required=False)

    class Meta:
        model = Event
        fields = ["seq", "type", "step", "payload", "created_at"]
        read_only_fields = fields

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        for name in left_out(EVENT_PARTS, self.context):
            fields.pop(name)
        return fields
