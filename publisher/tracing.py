"""W3C trace context for messages and the publish span, when OpenTelemetry is installed.

``opentelemetry-api`` is optional: without it, or without an active span, messages leave
unchanged and no span is made. ``set_enabled(False)`` turns the spans off (FANFOLD_TRACING).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from types import ModuleType
from typing import Any

from publisher.messages import Message

TRACEPARENT = "traceparent"
BATCH_COUNT = "messaging.batch.message_count"

_enabled = True


def set_enabled(enabled: bool) -> None:
    """Make spans (``tracer()`` and the publish span) on or off in this process."""
    global _enabled
    _enabled = enabled


@functools.cache
def optional_module(module: str) -> ModuleType | None:
    """``module`` imported, or None when it is not installed (OpenTelemetry is optional)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def _propagate() -> ModuleType | None:
    return optional_module("opentelemetry.propagate")


def trace_api() -> ModuleType | None:
    """``opentelemetry.trace`` when it is installed, else None."""
    return optional_module("opentelemetry.trace")


@functools.cache
def _tracer() -> Any:
    api = trace_api()
    # A proxy until the application sets a provider, then that provider's tracer.
    return None if api is None else api.get_tracer("fanfold")


_override: Any = None


@functools.cache
def _providers_without_spans() -> tuple[type, ...]:
    """The API's own providers, whose spans record nothing."""
    api = trace_api()
    return () if api is None else (api.ProxyTracerProvider, api.NoOpTracerProvider)


def use_tracer(tracer_: Any) -> Any:
    """Make ``tracer_`` Fanfold's tracer instead of the global provider's (None: back to the
    global one); returns the one it replaces. For tests, which cannot reset the global
    provider."""
    global _override
    previous, _override = _override, tracer_
    return previous


def tracer() -> Any:
    """Fanfold's OpenTelemetry tracer, or None when spans are off, the API is missing, or no
    SDK provider is set (yet): the API's own provider makes spans that record nothing, and
    making them cost a few microseconds on every step."""
    if not _enabled:
        return None
    if _override is not None:
        return _override
    api = trace_api()
    if api is None or isinstance(api.get_tracer_provider(), _providers_without_spans()):
        return None
    return _tracer()


@contextmanager
def _publish_span(tracer_: Any, count: int) -> Iterator[None]:
    with tracer_.start_as_current_span(
        "fanfold.publish", kind=trace_api().SpanKind.PRODUCER,  # type: ignore[union-attr]
        attributes={BATCH_COUNT: count, "messaging.system": "celery"},
    ):  # fmt: skip
        yield


def publish_span(count: int) -> Any:
    """A context manager around one broker request of ``count`` messages (a no-op without
    OpenTelemetry); messages given their trace context inside it name this span."""
    tracer_ = tracer()
    return nullcontext() if tracer_ is None else _publish_span(tracer_, count)


def current_trace_headers() -> dict[str, str]:
    """The trace context headers (``traceparent``, ``tracestate``, ...) of the current span.

    Empty when OpenTelemetry is absent or no span is active.
    """
    propagate = _propagate()
    carrier: dict[str, str] = {}
    if propagate is not None:
        propagate.inject(carrier)
    return carrier


def with_trace_contexts(messages: list[Message]) -> list[Message]:
    """``messages``, each with the current trace context added as ``with_trace_context`` does.

    The context is read once for all of them (one request's messages share its span).
    """
    carrier: dict[str, str] | None = None
    traced: list[Message] = []
    for message in messages:
        if TRACEPARENT not in message.headers:
            if carrier is None:
                carrier = current_trace_headers()
            if carrier:
                message = replace(message, headers={**message.headers, **carrier})
        traced.append(message)
    return traced


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
