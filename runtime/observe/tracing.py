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


def span(name: str, attributes: dict[str, Any], links: list[Any] | None = None) -> Any:
    """A context manager making `name` the current span (a no-op when there are no spans)."""
    tracer_ = tracer()
    if tracer_ is None:
        return nullcontext(None)
    return tracer_.start_as_current_span(name, attributes=attributes, links=links)


def checkpoint_commit(items: int) -> Any:
    """The span of one checkpoint batch's transaction."""
    if tracer() is None:
        return nullcontext(None)
    return span("fanfold.checkpoint", {BATCH_ITEMS: items})
