"""The error envelope and the runtime-error-to-status table, without a database."""

from __future__ import annotations

import pytest
from django.http import Http404
from rest_framework import exceptions

from api.error_envelope import exception_handler, runtime_error_status
from api.request_errors import RequestTooLarge
from runtime.core.errors import (
    CallbackAlreadyCompleted,
    CallbackNotFound,
    FanfoldError,
    InvalidArguments,
    LeaseLost,
    PayloadError,
    PayloadTooLarge,
    RunAlreadyFinished,
    RunNotFound,
    WorkflowNotFound,
)


@pytest.mark.parametrize(
    ("exc", "status", "code"),
    [
        (PayloadTooLarge("big"), 413, "payload_too_large"),
        (PayloadError("not json"), 400, "invalid_payload"),
        (WorkflowNotFound("nope"), 400, "unknown_workflow"),
        (InvalidArguments("bad"), 400, "invalid_arguments"),
        (RunNotFound("gone"), 404, "not_found"),
        (CallbackNotFound("gone"), 404, "callback_not_found"),
        (RunAlreadyFinished("done"), 409, "run_finished"),
        (CallbackAlreadyCompleted("done"), 409, "callback_completed"),
    ],
)
def test_api_errors_runtime_error_maps_to_status(exc: FanfoldError, status: int, code: str) -> None:
    response = exception_handler(exc, {})
    assert response is not None
    assert response.status_code == status
    assert response.data == {"error": {"code": code, "message": exc.message}}


def test_api_errors_server_side_runtime_error_is_left_to_a_500() -> None:
    assert runtime_error_status(LeaseLost("x")) is None
    assert exception_handler(LeaseLost("x"), {}) is None
    assert exception_handler(RuntimeError("bug"), {}) is None


def test_api_errors_validation_error_flattens_fields() -> None:
    exc = exceptions.ValidationError(
        {"args": ["Expected a list."], "error": {"type": ["This field is required."]}}
    )
    response = exception_handler(exc, {})
    assert response is not None
    error = response.data["error"]
    assert error["code"] == "invalid"
    assert error["message"] == "args: Expected a list.; error.type: This field is required."
    assert error["fields"] == {
        "args": ["Expected a list."],
        "error": {"type": ["This field is required."]},
    }


def test_api_errors_non_field_errors_have_no_prefix() -> None:
    response = exception_handler(exceptions.ValidationError({"non_field_errors": ["post one"]}), {})
    assert response is not None
    assert response.data["error"]["message"] == "post one"


@pytest.mark.parametrize(
    ("exc", "status", "code"),
    [
        (exceptions.NotAuthenticated(), 401, "not_authenticated"),
        (exceptions.PermissionDenied(), 403, "permission_denied"),
        (Http404(), 404, "not_found"),
        (exceptions.MethodNotAllowed("DELETE"), 405, "method_not_allowed"),
        (exceptions.ParseError(), 400, "parse_error"),
        (exceptions.UnsupportedMediaType("text/plain"), 415, "unsupported_media_type"),
        (exceptions.Throttled(wait=3), 429, "throttled"),
        (RequestTooLarge(), 413, "payload_too_large"),
    ],
)
def test_api_errors_drf_errors_get_the_envelope(exc: Exception, status: int, code: str) -> None:
    response = exception_handler(exc, {})
    assert response is not None
    assert response.status_code == status
    assert response.data["error"]["code"] == code
    assert response.data["error"]["message"]


def test_api_errors_throttled_sets_retry_after() -> None:
    response = exception_handler(exceptions.Throttled(wait=3), {})
    assert response is not None
    assert response["Retry-After"] == "3"
