"""Registered workflows (their parameters, schedule and concurrency) and schedules."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from runtime.models import Schedule

PARAMETER_KINDS = [(k, k) for k in ("positional", "keyword", "var_positional", "var_keyword")]


class WorkflowParameterSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=PARAMETER_KINDS)
    required = serializers.BooleanField()  # type: ignore[assignment]  # see errors.ErrorBodySerializer


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
    search = serializers.DictField(
        child=serializers.CharField(),
        help_text="its search attributes, name to type (int, str, float, bool, datetime)",
    )


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
