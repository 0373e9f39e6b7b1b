"""The error envelope: every API error is `{"error": {"code": ..., "message": ...}}`.

Runtime errors map to HTTP statuses by type; DRF's own errors (validation, auth, 404, 405,
parse, throttling) are rewrapped with their stable DRF code.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpRequest, JsonResponse
from django.urls import Resolver404, resolve
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import set_rollback

from runtime.core.errors import (
    CallbackAlreadyCompleted,
    CallbackNotFound,
    FanfoldError,
    IdempotencyConflict,
    InvalidArguments,
    NothingToRetry,
    NotPermitted,
    PayloadError,
    PayloadTooLarge,
    PositionOutOfRange,
    PositionUnfinished,
    ReservedIdempotencyKey,
    RunAlreadyFinished,
    RunNotFound,
    ScheduleNotFound,
    StreamNotFound,
    UnknownUpdate,
    UpdateNotFound,
    UpdateRejected,
    UpdateValidatorFailed,
    ValueNotFound,
    WorkflowNotFound,
)

# Most specific first: PayloadTooLarge is a PayloadError.
RUNTIME_ERROR_STATUS: tuple[tuple[type[FanfoldError], int], ...] = (
    (PayloadTooLarge, status.HTTP_413_REQUEST_ENTITY_TOO_LARGE),
    (PayloadError, status.HTTP_400_BAD_REQUEST),
    (WorkflowNotFound, status.HTTP_400_BAD_REQUEST),
    (InvalidArguments, status.HTTP_400_BAD_REQUEST),
    (RunNotFound, status.HTTP_404_NOT_FOUND),
    (CallbackNotFound, status.HTTP_404_NOT_FOUND),
    (ScheduleNotFound, status.HTTP_404_NOT_FOUND),
    (ValueNotFound, status.HTTP_404_NOT_FOUND),
    (StreamNotFound, status.HTTP_404_NOT_FOUND),
    (UpdateNotFound, status.HTTP_404_NOT_FOUND),
    (UpdateValidatorFailed, status.HTTP_422_UNPROCESSABLE_ENTITY),
    (UpdateRejected, status.HTTP_400_BAD_REQUEST),
    (UnknownUpdate, status.HTTP_400_BAD_REQUEST),
    (RunAlreadyFinished, status.HTTP_409_CONFLICT),
    (CallbackAlreadyCompleted, status.HTTP_409_CONFLICT),
    (PositionOutOfRange, status.HTTP_400_BAD_REQUEST),
    (PositionUnfinished, status.HTTP_409_CONFLICT),
    (NothingToRetry, status.HTTP_409_CONFLICT),
    (IdempotencyConflict, status.HTTP_409_CONFLICT),
    (ReservedIdempotencyKey, status.HTTP_400_BAD_REQUEST),
    (NotPermitted, status.HTTP_403_FORBIDDEN),
)


def envelope(code: str, message: str, fields: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if fields is not None:
        error["fields"] = fields
    return {"error": error}


def runtime_error_status(exc: FanfoldError) -> int | None:
    """The HTTP status of a runtime error that callers can cause, or None (a server error)."""
    for kind, code in RUNTIME_ERROR_STATUS:
        if isinstance(exc, kind):
            return code
    return None


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's EXCEPTION_HANDLER: the envelope for every error a client can cause."""
    if isinstance(exc, FanfoldError):
        code = runtime_error_status(exc)
        if code is None:
            return None
        set_rollback()
        body = envelope(exc.code, exc.message)
        if isinstance(exc, UpdateValidatorFailed):  # what the validator raised, by name
            body["error"]["type"] = exc.error_type
        return Response(body, status=code)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    if not isinstance(exc, exceptions.APIException):
        return None
    headers: dict[str, str] = {}
    auth_header = getattr(exc, "auth_header", None)
    if auth_header:
        headers["WWW-Authenticate"] = auth_header
    wait = getattr(exc, "wait", None)
    if wait:
        headers["Retry-After"] = str(int(wait))
    set_rollback()
    if isinstance(exc, exceptions.ValidationError):
        body = envelope("invalid", _flatten(exc.detail), _fields(exc.detail))
    else:
        body = envelope(exc.default_code, _flatten(exc.detail))
    return Response(body, status=exc.status_code, headers=headers)


def endpoint_not_found(request: HttpRequest, path: str = "") -> JsonResponse:
    """The 404 for any /api/ path no endpoint matches (instead of Django's HTML page)."""
    message = f"no API endpoint at {request.path}"
    if not request.path.endswith("/"):
        try:
            match = resolve(request.path + "/")
        except Resolver404:
            match = None
        if match is not None and match.func is not endpoint_not_found:
            message += f"; did you mean {request.path}/ ?"
    return JsonResponse(envelope("not_found", message), status=404)


def _flatten(detail: Any, prefix: str = "") -> str:
    if isinstance(detail, dict):
        parts = [
            _flatten(value, f"{prefix}{key}." if key != "non_field_errors" else prefix)
            for key, value in detail.items()
        ]
        return "; ".join(p for p in parts if p)
    if isinstance(detail, list):
        return "; ".join(_flatten(item, prefix) for item in detail)
    text = str(detail)
    return f"{prefix.rstrip('.')}: {text}" if prefix else text


def _fields(detail: Any) -> Any:
    if isinstance(detail, dict):
        return {str(key): _fields(value) for key, value in detail.items()}
    if isinstance(detail, list):
        return [_fields(item) for item in detail]
    return str(detail)
