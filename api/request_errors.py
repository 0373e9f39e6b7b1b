"""API-level errors of our own, beside DRF's. No view imports here: parsers load early."""

from __future__ import annotations

from rest_framework import exceptions, status


class RequestTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "payload_too_large"
    default_detail = "the request body is too large"


class InvalidQuery(exceptions.ValidationError):
    """A query parameter (filter, cursor, `after`) that cannot be used."""


class TooManyStreams(exceptions.APIException):
    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_code = "too_many_streams"
    default_detail = "too many open streams for this user"
