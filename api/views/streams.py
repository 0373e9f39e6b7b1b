"""A run's stream as server-sent events, served as bounded long-polls.

Each response streams for at most `FANFOLD_SSE_WINDOW_SECONDS` and then closes; the client
reconnects with `Last-Event-ID` (EventSource does so by itself, after the `retry:` delay sent
first) and gets what followed. So a sync worker thread is never held by one client for longer
than a window, however long the run goes on, and a reader costs nothing between windows.
When the run has finished the last response sends every remaining chunk, then an `end` event;
a reconnect after that gets 204 No Content, which tells EventSource to stop reconnecting. A
finished run's stream that was never written is a 404 (`stream_not_found`), so a client tells a
misspelt name from a stream read to its end; while the run goes on, a stream not written yet
is followed (the run may still write it).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import NotAuthenticated
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from api.request_errors import InvalidQuery
from api.stream_slots import SlotHoldingStream, hold_stream_slot
from api.views.docs import AUTH_ERRORS, ErrorSerializer, _JsonErrors, errors
from runtime import conf
from runtime.access import visible_run
from runtime.core.errors import StreamNotFound
from runtime.core.identity import check_name
from runtime.models import Run
from runtime.streaming.reader import StreamFollower, chunks_after, run_finished

RECONNECT_MS = 500  # how soon EventSource comes back after a window closes


class EventStreamRenderer(BaseRenderer):
    """Lets clients ask for `text/event-stream`; the events themselves bypass rendering."""

    media_type = "text/event-stream"
    format = "sse"

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None
    ) -> bytes:
        return json.dumps(data).encode()


def _after(request: Request) -> int:
    raw = request.headers.get("Last-Event-ID") or request.query_params.get("after") or "0"
    # str.isdigit() also accepts "²" and other digits int() refuses: ASCII digits only.
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 18:
        raise InvalidQuery(
            {"after": "Last-Event-ID and ?after= must be a chunk seq (an integer >= 0)"}
        )
    return int(raw)


def _events(run: Run, name: str, after: int, window: float) -> Iterator[bytes]:
    yield f"retry: {RECONNECT_MS}\n\n".encode()
    follower = StreamFollower(run.id, name, after, until=time.monotonic() + window)
    for page in follower.pages():  # one write per look, however many chunks it found
        yield "".join(f"id: {c.seq}\ndata: {json.dumps(c.value)}\n\n" for c in page).encode()
    if follower.ended:
        status = Run.objects.filter(id=run.id).values_list("status", flat=True).first()
        yield f"event: end\ndata: {json.dumps({'status': status})}\n\n".encode()


def _drained(run_id: uuid.UUID, name: str, after: int) -> bool:
    return run_finished(run_id) and not chunks_after(run_id, name, after, limit=1)


class RunStreamView(_JsonErrors, APIView):
    renderer_classes = [JSONRenderer, EventStreamRenderer]

    @extend_schema(
        operation_id="runs_stream",
        parameters=[
            OpenApiParameter("run_id", OpenApiTypes.UUID, OpenApiParameter.PATH),
            OpenApiParameter("name", OpenApiTypes.STR, OpenApiParameter.PATH),
            OpenApiParameter("after", OpenApiTypes.INT, description="resume after this seq"),
            OpenApiParameter(
                "Last-Event-ID", OpenApiTypes.INT, OpenApiParameter.HEADER, description="as ?after="
            ),
        ],
        responses={
            (200, "text/event-stream"): OpenApiResponse(
                OpenApiTypes.STR, description="events `id: SEQ` / `data: JSON`, then `end`"
            ),
            204: OpenApiResponse(description="the run has finished and nothing follows"),
            **errors(400, *AUTH_ERRORS, 429),
            404: OpenApiResponse(
                ErrorSerializer,
                description="no such run (`not_found`), or the run has finished and never "
                "wrote this stream (`stream_not_found`)",
            ),
        },
        summary="A run's stream as server-sent events (Last-Event-ID resumes)",
    )
    def get(self, request: Request, run_id: str, name: str) -> HttpResponse | StreamingHttpResponse:
        run = visible_run(request.user, run_id)
        try:
            check_name(name, "stream")
        except ValueError as exc:
            raise InvalidQuery({"name": str(exc)}) from None
        after = _after(request)
        if _drained(run.id, name, after):
            if after == 0 or not chunks_after(run.id, name, 0, limit=1):
                raise StreamNotFound(f"run {run.id} has finished and never wrote stream {name!r}")
            return HttpResponse(status=204)
        if not isinstance(request.user.pk, int):  # the permission lets only users in
            raise NotAuthenticated()
        release = hold_stream_slot(request.user.pk)
        window = conf.get().SSE_WINDOW_SECONDS
        events = SlotHoldingStream(_events(run, name, after, window), release)
        response = StreamingHttpResponse(events, content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"  # proxies must pass events on as they come
        return response
