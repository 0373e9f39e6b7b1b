"""OpenTelemetry spans for run passes, step attempts and checkpoint commits (optional).

Everything here is a no-op without `opentelemetry-api` or with FANFOLD_TRACING off; with the
API but no SDK provider the spans are the API's non-recording ones. The publisher makes the
publish span (publisher.tracing); a branch's step span links to it through the message's
`traceparent`.
"""

from __future__ import annotations

import contextvars
from contextlib import nullcontext
from typing import Any

from publisher import tracing as publish_tracing

RUN_ID = "fanfold.run_id"
WORKFLOW = "fanfold.workflow"
STEP_NAME = "fanfold.step.name"
POSITION = "fanfold.step.position"
ATTEMPT = "fanfold.step.attempt"
OUTCOME = "fanfold.outcome"
BATCH_ITEMS = "fanfold.checkpoint.batch_size"

# The workflow of the run pass this thread executes: step spans name it without being told.
current_workflow: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "fanfold_span_workflow", default=None
)


def set_enabled(enabled: bool) -> None:
    """Make Fanfold's spans on or off in this process (FANFOLD_TRACING)."""
    publish_tracing.set_enabled(enabled)


def tracer() -> Any:
    """The tracer, or None when there are no spans to make."""
    return publish_tracing.tracer()


def links_from(traceparent: str | None) -> list[Any]:
    """A span link to the span a `traceparent` header names; none if it names nothing."""
    if not traceparent:
        return []
    api = publish_tracing.trace_api()
    propagate = publish_tracing.optional_module("opentelemetry.propagate")
    if api is None or propagate is None:
        return []
    context = propagate.extract({publish_tracing.TRACEPARENT: traceparent})
    span_context = api.get_current_span(context).get_span_context()
    return [api.Link(span_context)] if span_context.is_valid else []


class OpenSpan:
    """A started span, current in this thread until `close()` (the SDK's context manager
    does the same with a generator and more bookkeeping; this is on every step's path)."""

    __slots__ = ("_span", "_token")

    def __init__(self, tracer_: Any, name: str, attributes: dict[str, Any], links: list[Any]):
        api = publish_tracing.trace_api()
        context = publish_tracing.optional_module("opentelemetry.context")
        self._span = tracer_.start_span(name, attributes=attributes, links=links)
        self._token = context.attach(api.set_span_in_context(self._span))  # type: ignore[union-attr]

    def close(self, outcome: str) -> None:
        context = publish_tracing.optional_module("opentelemetry.context")
        context.detach(self._token)  # type: ignore[union-attr]
        self._span.set_attribute(OUTCOME, outcome)
        self._span.end()


class _CommitSpan:
    """The span of one checkpoint transaction: a child of whatever span is current, never
    made current itself (nothing runs inside it that makes spans)."""

    __slots__ = ("_span", "_tracer", "items")

    def __init__(self, tracer_: Any, items: int) -> None:
        self._tracer = tracer_
        self.items = items

    def __enter__(self) -> None:
        self._span = self._tracer.start_span(
            "fanfold.checkpoint", attributes={BATCH_ITEMS: self.items}
        )

    def __exit__(self, *exc: object) -> None:
        self._span.end()


_NO_SPAN = nullcontext(None)


def checkpoint_commit(items: int) -> Any:
    """A context manager around one checkpoint batch's transaction (a no-op without spans)."""
    tracer_ = tracer()
    return _NO_SPAN if tracer_ is None else _CommitSpan(tracer_, items)
