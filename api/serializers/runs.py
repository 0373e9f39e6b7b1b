"""Runs: what a start and a fork take, the list's filters, and a run in a list and on its own."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.includes import RUN_PARTS, left_out
from runtime.django_tasks.run_view import task_run_view
from runtime.models import Run
from runtime.selectors import search_attributes, step_counts


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
    search = serializers.DictField(
        child=serializers.JSONField(),
        required=False,
        help_text="search attributes the workflow declares, name to value (a datetime as "
        'ISO 8601 text with a time zone): {"customer": 42, "region": "eu"}',
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
    name = serializers.SerializerMethodField(
        help_text="the workflow's name; for a Django task (workflow `fanfold.django_task`), "
        "the task's path"
    )
    args = serializers.ListField(child=serializers.JSONField(), read_only=True)
    kwargs = serializers.DictField(child=serializers.JSONField(), read_only=True)
    result = serializers.JSONField(read_only=True, allow_null=True)
    error = serializers.JSONField(read_only=True, allow_null=True)
    search = serializers.SerializerMethodField(
        help_text="the run's search attributes, name to value (a datetime as ISO 8601 text)"
    )

    class Meta:
        model = Run
        fields = [
            "id",
            "workflow",
            "name",
            "status",
            "owner",
            "args",
            "kwargs",
            "idempotency_key",
            "priority",
            "concurrency_key",
            "app_version",
            "result",
            "error",
            "search",
            "created_at",
            "started_at",
            "finished_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_name(self, run: Run) -> str:
        task = task_run_view(run.workflow, run.input)
        return task.path if task else run.workflow

    def to_representation(self, instance: Run) -> dict[str, Any]:
        """A Django task's run shows the task's own arguments, not the envelope its one
        workflow is started with (the detail has that envelope as `task`)."""
        data = super().to_representation(instance)
        task = task_run_view(instance.workflow, instance.input)
        if task is not None:
            for key in ("args", "kwargs"):
                if key in data:
                    data[key] = task.arguments[key]
        return data

    @extend_schema_field(serializers.DictField(child=serializers.JSONField()))
    def get_search(self, run: Run) -> dict[str, Any]:
        # A list page reads its runs' attributes in one query (the view passes them).
        known = self.context.get("search")
        if known is None:
            known = search_attributes([run.id])
        return dict(known.get(run.id, {}))


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
    task = serializers.SerializerMethodField(
        help_text="a Django task's envelope (its path, backend, queue, priority, enqueued_at, "
        "run_after); null for other runs"
    )

    class Meta(RunSerializer.Meta):
        fields = [
            *RunSerializer.Meta.fields,
            "step_counts",
            "forked_from",
            "forked_from_position",
            "forks",
            "task",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.DictField(child=serializers.JSONField(), allow_null=True))
    def get_task(self, run: Run) -> dict[str, Any] | None:
        task = task_run_view(run.workflow, run.input)
        return task.envelope if task else None

    @extend_schema_field(serializers.ListField(child=serializers.UUIDField()))
    def get_forks(self, run: Run) -> list[str]:
        return [str(i) for i in run.forks.order_by("created_at").values_list("id", flat=True)]

    @extend_schema_field(StepCountsSerializer)
    def get_step_counts(self, run: Run) -> dict[str, int]:
        return step_counts(run.id)


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
