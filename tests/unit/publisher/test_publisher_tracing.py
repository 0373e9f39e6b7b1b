"""Each message carries the W3C trace context of the span that published it."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import nullcontext

import pytest
from opentelemetry.sdk.trace import TracerProvider

from publisher import tracing
from publisher.core import publish_messages
from publisher.fake import FakeTransport
from publisher.messages import Message, Routing

TRACEPARENT = re.compile(r"^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")


@pytest.fixture
def tracer_provider() -> Iterator[TracerProvider]:
    # A local provider: the global one can be set only once per process.
    provider = TracerProvider()
    yield provider
    provider.shutdown()


def test_publish_messages_injects_trace_context_into_each_message(
    fake: FakeTransport, tracer_provider: TracerProvider
) -> None:
    messages = [Message("t", f"k{i}", routing=Routing(queue=f"q{i % 2}")) for i in range(5)]
    tracer = tracer_provider.get_tracer(__name__)

    with tracer.start_as_current_span("dispatch") as span:
        publish_messages(messages, fake)
        trace_id = format(span.get_span_context().trace_id, "032x")

    sent = [m for request in fake.requests for m in request.messages]
    assert len(sent) == 5
    for message in sent:
        assert TRACEPARENT.match(message.headers["traceparent"])
        assert message.headers["traceparent"].split("-")[1] == trace_id
    # Each message got its own headers dict, not a shared one.
    assert len({id(m.headers) for m in sent}) == 5
    assert all("traceparent" not in m.headers for m in messages)


def test_with_trace_context_keeps_a_traceparent_the_message_already_has(
    tracer_provider: TracerProvider,
) -> None:
    own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    message = Message("t", "k", headers={"traceparent": own})

    with tracer_provider.get_tracer(__name__).start_as_current_span("dispatch"):
        traced = tracing.with_trace_context(message)

    assert traced.headers["traceparent"] == own


def test_with_trace_context_leaves_messages_alone_without_a_span() -> None:
    message = Message("t", "k", headers={"x": 1})

    assert tracing.with_trace_context(message) is message


def test_with_trace_context_does_nothing_without_opentelemetry(
    monkeypatch: pytest.MonkeyPatch, tracer_provider: TracerProvider
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.propagate", None)
    tracing.optional_module.cache_clear()
    message = Message("t", "k")
    try:
        with tracer_provider.get_tracer(__name__).start_as_current_span("dispatch"):
            assert tracing.with_trace_context(message) is message
            assert tracing.current_trace_headers() == {}
    finally:
        tracing.optional_module.cache_clear()


def test_no_spans_are_made_until_an_sdk_provider_is_set(
    monkeypatch: pytest.MonkeyPatch, tracer_provider: TracerProvider
) -> None:
    from opentelemetry import trace

    for own in (trace.ProxyTracerProvider(), trace.NoOpTracerProvider()):
        monkeypatch.setattr(trace, "get_tracer_provider", lambda own=own: own)
        assert tracing.tracer() is None
        assert isinstance(tracing.publish_span(3), nullcontext)

    monkeypatch.setattr(trace, "get_tracer_provider", lambda: tracer_provider)
    assert tracing.tracer() is not None
    tracing.set_enabled(False)
    try:
        assert tracing.tracer() is None
    finally:
        tracing.set_enabled(True)
