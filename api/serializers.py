"""Request and response shapes of the REST API (also the source of the OpenAPI document)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.includes import EVENT_PARTS, RUN_PARTS, STEP_PARTS, left_out
from runtime import conf
from runtime.core.callbacks import recover_token
from runtime.models import Event, Run, RunStatus, Schedule, Step, choices
from runtime.models.states import SHOWN_STEP_STATUSES
from runtime.selectors import step_counts

CALLBACK_STATUSES = [("running", "running"), ("completed", "completed"), ("failed", "failed")]
PARAMETER_KINDS = [(k, k) for k in ("positional", "keyword", "var_positional", "var_keyword")]


class ErrorBodySerializer(serializers.Serializer[Any]):
    code = serializers.CharField(help_text="stable machine-readable error code")
    message = serializers.CharField(help_text="what is wrong, for people")
    # DRF pops declared fields off the class, so the name may shadow Serializer.fields.
    fields = serializers.JSONField(  # type: ignore[assignment]
        required=False, help_text="per-field messages, for validation errors only"
    )


class ErrorSerializer(serializers.Serializer[Any]):
    error = ErrorBodySerializer()


class StartRunSerializer(serializers.Serializer[Any]):
    workflow = serializers.CharField(max_length=200, help_text="a registered workflow name")
    args = serializers.ListField(child=serializers.JSONField(), default=list)
    kwargs = serializers.DictField(child=serializers.JSONField(), default=dict)
    idempotency_key = serializers.CharField(
        max_length=255,
        required=False,
        allow_null=True,
        help_text="a second start with the same key returns the first run",
    )
    concurrency_key = serializers.CharField(
        max_length=255,
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text="the slots to count against, for a workflow with `concurrency=N`",
    )
    priority = serializers.IntegerField(
        min_value=0, max_value=9, default=0, help_text="0-9, higher is admitted first"
    )


class ForkRunSerializer(serializers.Serializer[Any]):
    from_position = serializers.IntegerField(
        help_text="the first position run again; the records before it are copied"
    )
    args = serializers.ListField(
        child=serializers.JSONField(),
        required=False,
        help_text="new arguments (default: the source's)",
    )
    kwargs = serializers.DictField(
        child=serializers.JSONField(), required=False, help_text="new keyword arguments"
    )


class RunFilterSerializer(serializers.Serializer[Any]):
    status = serializers.ChoiceField(choices=choices(RunStatus), required=False)
    workflow = serializers.CharField(max_length=200, required=False)


class StepCountsSerializer(serializers.Serializer[Any]):
    pending = serializers.IntegerField()
    running = serializers.IntegerField()
    completed = serializers.IntegerField()
    failed = serializers.IntegerField()
    cancelled = serializers.IntegerField()


class RunSerializer(serializers.ModelSerializer[Run]):
    owner = serializers.IntegerField(
        source="owner_id",
        read_only=True,
        allow_null=True,
        help_text="the id of the user who owns the run (null: started by a schedule or code)",
    )
    args = serializers.ListField(child=serializers.JSONField(), read_only=True)
    kwargs = serializers.DictField(child=serializers.JSONField(), read_only=True)
    result = serializers.JSONField(read_only=True, allow_null=True)
    error = serializers.JSONField(read_only=True, allow_null=True)

    class Meta:
        model = Run
        fields = [
            "id",
            "workflow",
            "status",
            "owner",
            "args",
            "kwargs",
            "idempotency_key",
            "priority",
            "concurrency_key",
            "result",
            "error",
            "created_at",
            "started_at",
            "finished_at",
            "updated_at",
        ]
        read_only_fields = fields


class RunDetailSerializer(RunSerializer):
    step_counts = serializers.SerializerMethodField()
    forked_from = serializers.UUIDField(
        source="forked_from_id",
        read_only=True,
        allow_null=True,
        help_text="the run this one was forked from (fork or retry), if any",
    )
    forked_from_position = serializers.IntegerField(
        read_only=True, allow_null=True, help_text="the position the fork ran again from"
    )
    forks = serializers.SerializerMethodField(help_text="ids of the runs forked from this one")

    class Meta(RunSerializer.Meta):
        fields = [
            *RunSerializer.Meta.fields,
            "step_counts",
            "forked_from",
            "forked_from_position",
            "forks",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.ListField(child=serializers.UUIDField()))
    def get_forks(self, run: Run) -> list[str]:
        return [str(i) for i in run.forks.order_by("created_at").values_list("id", flat=True)]

    @extend_schema_field(StepCountsSerializer)
    def get_step_counts(self, run: Run) -> dict[str, int]:
        return step_counts(run.id)


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
        return recover_token(conf.token_secrets(), step.id, step.callback_token)


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


class RunSummarySerializer(RunSerializer):
    """A run in a list: its input, result and error only with `?include=`."""

    # Not read-only, so that the OpenAPI document shows them optional.
    args = serializers.ListField(child=serializers.JSONField(), required=False)
    kwargs = serializers.DictField(child=serializers.JSONField(), required=False)
    result = serializers.JSONField(required=False, allow_null=True)
    error = serializers.JSONField(required=False, allow_null=True)

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        for name in left_out(RUN_PARTS, self.context):
            fields.pop(name)
        return fields


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


class CallbackErrorSerializer(serializers.Serializer[Any]):
    type = serializers.CharField(max_length=200)
    message = serializers.CharField(allow_blank=True, default="", trim_whitespace=False)


class CallbackPostSerializer(serializers.Serializer[Any]):
    """Exactly one of `result`, `error` or `heartbeat: true`."""

    result = serializers.JSONField(required=False, allow_null=True)
    error = CallbackErrorSerializer(required=False)
    heartbeat = serializers.BooleanField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        given = ("result" in attrs) + ("error" in attrs) + bool(attrs.get("heartbeat"))
        if given != 1:
            raise serializers.ValidationError(
                'post exactly one of {"result": ...}, {"error": {"type", "message"}} or '
                '{"heartbeat": true}'
            )
        return attrs


class CallbackTokenPostSerializer(CallbackPostSerializer):
    """A post to /api/callbacks/: the token in the body, unless in `Authorization: Bearer`."""

    token = serializers.CharField(
        required=False, max_length=64, help_text="the callback's token (or a Bearer header)"
    )


class CallbackReceiptSerializer(serializers.Serializer[Any]):
    callback = serializers.CharField(help_text="the callback's name")
    status = serializers.ChoiceField(choices=CALLBACK_STATUSES)
    deadline = serializers.DateTimeField(
        allow_null=True, help_text="when the callback times out unless posted (or heartbeated)"
    )


class WorkflowParameterSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=PARAMETER_KINDS)
    required = serializers.BooleanField()  # type: ignore[assignment]  # as for ErrorBody.fields


class WorkflowScheduleSerializer(serializers.Serializer[Any]):
    kind = serializers.ChoiceField(choices=["cron", "interval"])
    expression = serializers.CharField(help_text="the cron expression, or the interval in seconds")
    timezone = serializers.CharField()
    catchup = serializers.ChoiceField(choices=["skip", "latest", "all"])


class WorkflowSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    parameters = WorkflowParameterSerializer(many=True)
    schedule = WorkflowScheduleSerializer(allow_null=True)
    concurrency = serializers.IntegerField(allow_null=True)


class ScheduleSerializer(serializers.ModelSerializer[Schedule]):
    class Meta:
        model = Schedule
        fields = [
            "workflow",
            "kind",
            "expression",
            "timezone",
            "catchup",
            "paused",
            "last_tick",
            "next_tick",
            "updated_at",
        ]
        read_only_fields = fields
