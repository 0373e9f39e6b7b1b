"""W3C trace context for messages, when OpenTelemetry is installed.

``opentelemetry-api`` is optional: without it, or without an active span, messages leave
unchanged.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import replace
from types import ModuleType

from publisher.messages import Message

TRACEPARENT = "traceparent"


@functools.cache
def _propagate() -> ModuleType | None:
    try:
        return importlib.import_module("opentelemetry.propagate")
    except ImportError:
        return None


def current_trace_headers() -> dict[str, str]:
    """The trace context headers (``traceparent``, ``tracestate``, ...) of the current span.

    Empty when OpenTelemetry is absent or no span is active.
    """
    propagate = _propagate()
    carrier: dict[str, str] = {}
    if propagate is not None:
        propagate.inject(carrier)
    return carrier


def with_trace_context(message: Message) -> Message:
    """``message`` with the current trace context added to its own headers.

    A message that already carries a ``traceparent`` keeps it: the context captured where the
    message was created is a better parent than the thread that happens to publish it.
    """
    if TRACEPARENT in message.headers:
        return message
    carrier = current_trace_headers()
    if not carrier:
        return message
    return replace(message, headers={**message.headers, **carrier})
