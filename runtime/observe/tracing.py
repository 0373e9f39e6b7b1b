"""OpenTelemetry spans for run passes and step attempts (optional).

Everything here is a no-op without `opentelemetry-api` or with FANFOLD_TRACING off; with the
API but no SDK provider the spans are the API's non-recording ones. The publisher makes the
publish span (publisher.tracing); a branch's step span links to it through the message's
`traceparent`.

A step span is on every step's path, so it costs one SDK span and no more: its attributes are
made only when the sampler keeps it, its link is parsed once per publish request, and
checkpoint commits are not spans of their own. The time a step waited for its commits is an
attribute of its span instead (the batch's own commit time is the
`fanfold_checkpoint_commit_seconds` histogram).
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from typing import Any

from publisher import tracing as publish_tracing

RUN_ID = "fanfold.run_id"
WORKFLOW = "fanfold.workflow"
STEP_NAME = "fanfold.step.name"
POSITION = "fanfold.step.position"
ATTEMPT = "fanfold.step.attempt"
OUTCOME = "fanfold.outcome"
CHECKPOINT_SECONDS = "fanfold.checkpoint.seconds"

# The workflow of the run pass this thread executes: step spans name it without being told.
current_workflow: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "fanfold_span_workflow", default=None
)
# The recording step span of this thread, which its synchronous checkpoints add their wait to.
_current_step: contextvars.ContextVar[OpenSpan | None] = contextvars.ContextVar(
    "fanfold_step_span", default=None
)


def set_enabled(enabled: bool) -> None:
    """Make Fanfold's spans on or off in this process (FANFOLD_TRACING)."""
    publish_tracing.set_enabled(enabled)


def tracer() -> Any:
    """The tracer, or None when there are no spans to make."""
    return publish_tracing.tracer()


def links_from(traceparent: str | None) -> tuple[Any, ...]:
    """A span link to the span a `traceparent` header names; none if it names nothing."""
    if not traceparent:
        return ()
    return _links(traceparent)


# One publish request's messages share its span's traceparent: a fan-out's branches parse
# each header once per process, not once per branch.
@functools.lru_cache(maxsize=256)
def _links(traceparent: str) -> tuple[Any, ...]:
    api = publish_tracing.trace_api()
    propagate = publish_tracing.optional_module("opentelemetry.propagate")
    if api is None or propagate is None:
        return ()
    context = propagate.extract({publish_tracing.TRACEPARENT: traceparent})
    span_context = api.get_current_span(context).get_span_context()
    return (api.Link(span_context),) if span_context.is_valid else ()


class OpenSpan:
    """A started span, current in this thread until `close()` (the SDK's context manager
    does the same with a generator and more bookkeeping; this is on every step's path).

    `attributes` is called only if the span records: an unsampled span costs the sampler's
    decision, the context switch and a cached link, nothing else. The attributes
    are set when the span ends, with the outcome, in one call (one lock of the SDK's span).
    """

    __slots__ = ("_attributes", "_span", "_step_token", "_token", "recording", "waited")

    def __init__(
        self,
        tracer_: Any,
        name: str,
        attributes: Callable[[], dict[str, Any]],
        traceparent: str | None = None,
        *,
        step: bool = False,
    ) -> None:
        api = publish_tracing.trace_api()
        context = publish_tracing.optional_module("opentelemetry.context")
        self._span = span = tracer_.start_span(name, links=links_from(traceparent))
        self._token = context.attach(api.set_span_in_context(span))  # type: ignore[union-attr]
        self._attributes = attributes
        self.recording = span.is_recording()
        self.waited = 0.0
        self._step_token: Any = None
        if self.recording and step:
            self._step_token = _current_step.set(self)

    def close(self, outcome: str) -> None:
        context = publish_tracing.optional_module("opentelemetry.context")
        context.detach(self._token)  # type: ignore[union-attr]
        if self.recording:
            if self._step_token is not None:
                _current_step.reset(self._step_token)
            attributes = self._attributes()
            attributes[OUTCOME] = outcome
            if self.waited:
                attributes[CHECKPOINT_SECONDS] = self.waited
            self._span.set_attributes(attributes)
        self._span.end()


def waited_for_commit(seconds: float) -> None:
    """A synchronous checkpoint of this thread took `seconds` to commit: the step attempt
    whose span is recording here, if any, counts them."""
    span = _current_step.get()
    if span is not None:
        span.waited += seconds
