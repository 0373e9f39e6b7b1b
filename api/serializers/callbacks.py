"""Callback posts (a result, an error or a heartbeat) and the receipt a post returns."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from runtime.services.callback_posts import MAX_TOKEN_LENGTH

CALLBACK_STATUSES = [("running", "running"), ("completed", "completed"), ("failed", "failed")]


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
        required=False,
        max_length=MAX_TOKEN_LENGTH,
        help_text="the callback's token (or a Bearer header)",
    )


class CallbackReceiptSerializer(serializers.Serializer[Any]):
    callback = serializers.CharField(help_text="the callback's name")
    status = serializers.ChoiceField(choices=CALLBACK_STATUSES)
    deadline = serializers.DateTimeField(
        allow_null=True, help_text="when the callback times out unless posted (or heartbeated)"
    )
