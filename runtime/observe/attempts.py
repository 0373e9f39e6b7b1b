"""One step attempt or one run pass as metrics and spans see it: timed, named, with an outcome.

The caller sets `.outcome` before the block ends; an attempt that leaves by an exception the
caller did not classify counts as failed. Spans do not record exceptions (a retry suspends the
run by raising one): the outcome attribute says what happened.
"""

from __future__ import annotations

import uuid
from time import perf_counter
from types import TracebackType
from typing import Any

from runtime.observe import metrics, tracing


class _Observed:
    __slots__ = ("_span", "outcome")

    def __init__(self) -> None:
        self.outcome = "failed"
        self._span: tracing.OpenSpan | None = None

    def _open_span(self, name: str, attributes: dict[str, Any], links: list[Any]) -> None:
        tracer = tracing.tracer()
        if tracer is not None:
            self._span = tracing.OpenSpan(tracer, name, attributes, links)

    def _close_span(self) -> None:
        if self._span is not None:
            self._span.close(self.outcome)


class StepAttempt(_Observed):
    """`with StepAttempt(...) as attempt:` around one attempt of one step (inline or branch)."""

    __slots__ = ("_attributes", "_links", "_started", "name")

    def __init__(
        self,
        run_id: uuid.UUID,
        name: str,
        position: int,
        attempt: int,
        traceparent: str | None = None,
    ) -> None:
        super().__init__()
        self.name = name
        self._attributes: dict[str, Any] = {
            tracing.RUN_ID: str(run_id),
            tracing.STEP_NAME: name,
            tracing.POSITION: position,
            tracing.ATTEMPT: attempt,
        }
        self._links = traceparent
        self._started = 0.0

    def __enter__(self) -> StepAttempt:
        if tracing.tracer() is not None:
            workflow = tracing.current_workflow.get()
            if workflow is not None:
                self._attributes[tracing.WORKFLOW] = workflow
            self._open_span("fanfold.step", self._attributes, tracing.links_from(self._links))
        self._started = perf_counter()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        metrics.step_attempt(self.name, self.outcome, perf_counter() - self._started)
        self._close_span()


class RunPass(_Observed):
    """`with RunPass(run_id, workflow) as run_pass:` around one execution of a run."""

    __slots__ = ("_run_id", "_token", "_workflow")

    def __init__(self, run_id: uuid.UUID, workflow: str) -> None:
        super().__init__()
        self._run_id = run_id
        self._workflow = workflow
        self._token: Any = None

    def __enter__(self) -> RunPass:
        self._token = tracing.current_workflow.set(self._workflow)
        attributes = {tracing.RUN_ID: str(self._run_id), tracing.WORKFLOW: self._workflow}
        self._open_span("fanfold.run", attributes, [])
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._close_span()
        tracing.current_workflow.reset(self._token)
