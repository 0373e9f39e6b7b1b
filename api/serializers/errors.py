"""The error envelope's shape, as the OpenAPI document shows it (api.error_envelope makes it)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


class ErrorBodySerializer(serializers.Serializer[Any]):
    code = serializers.CharField(help_text="stable machine-readable error code")
    message = serializers.CharField(help_text="what is wrong, for people")
    # DRF pops declared fields off the class, so the name may shadow Serializer.fields.
    fields = serializers.JSONField(  # type: ignore[assignment]
        required=False, help_text="per-field messages, for validation errors only"
    )
    type = serializers.CharField(
        required=False,
        help_text="the exception type an update's validator raised (update_validator_failed)",
    )


class ErrorSerializer(serializers.Serializer[Any]):
    error = ErrorBodySerializer()
