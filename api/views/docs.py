"""The schema, its Swagger UI page, and the error responses every endpoint documents."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from api.serializers import ErrorSerializer

_DESCRIPTIONS = {
    400: "bad input: not JSON, nested too deep, wrong shape, unknown workflow, bad arguments",
    401: "no or invalid credentials",
    403: "not allowed (e.g. a session request without its CSRF token)",
    404: "no such run, callback token or endpoint",
    405: "method not allowed here",
    409: "the run or callback has already finished",
    413: "the body or a payload in it is over FANFOLD_MAX_PAYLOAD_BYTES",
    415: "the body is not application/json",
    422: "an update's validator raised something other than a refusal (its type in `type`)",
    429: "too many requests from this client, or open streams of this user",
}

AUTH_ERRORS = (401, 403)


def errors(*statuses: int) -> dict[int, OpenApiResponse]:
    """OpenAPI responses for these error statuses, all with the error envelope."""
    return {s: OpenApiResponse(ErrorSerializer, description=_DESCRIPTIONS[s]) for s in statuses}


class _JsonErrors:
    """Render errors as the JSON envelope even where the view's own format is YAML or HTML."""

    def finalize_response(
        self, request: Request, response: Response, *args: Any, **kwargs: Any
    ) -> Response:
        if getattr(response, "exception", False):
            request.accepted_renderer = JSONRenderer()
            request.accepted_media_type = "application/json"
        return super().finalize_response(request, response, *args, **kwargs)  # type: ignore[misc]


class SchemaView(_JsonErrors, SpectacularAPIView):
    pass


class DocsView(_JsonErrors, SpectacularSwaggerView):
    """Swagger UI, its scripts and styles served by this site (drf-spectacular-sidecar)."""
