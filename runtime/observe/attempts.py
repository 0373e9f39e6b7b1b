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


class StepAttempt:
    """`with StepAttempt(...) as attempt:` around one attempt of one step (inline or branch)."""

    __slots__ = ("_attempt", "_position", "_run_id", "_span", "_started", "_traceparent", "name",
                 "outcome")  # fmt: skip

    def __init__(
        self,
        run_id: uuid.UUID,
        name: str,
        position: int,
        attempt: int,
        traceparent: str | None = None,
    ) -> None:
        self.outcome = "failed"
        self.name = name
        self._run_id = run_id
        self._position = position
        self._attempt = attempt
        self._traceparent = traceparent
        self._span: tracing.OpenSpan | None = None
        self._started = 0.0

    def _attributes(self) -> dict[str, Any]:
        attributes: dict[str, Any] = {
            tracing.RUN_ID: str(self._run_id),
            tracing.STEP_NAME: self.name,
            tracing.POSITION: self._position,
            tracing.ATTEMPT: self._attempt,
        }
        workflow = tracing.current_workflow.get()
        if workflow is not None:
            attributes[tracing.WORKFLOW] = workflow
        return attributes

    def __enter__(self) -> StepAttempt:
        tracer = tracing.tracer()
        if tracer is not None:
            self._span = tracing.OpenSpan(
                tracer, "fanfold.step", self._attributes, self._traceparent, step=True
            )
        self._started = perf_counter()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        metrics.step_attempt(self.name, self.outcome, perf_counter() - self._started)
        if self._span is not None:
            self._span.close(self.outcome)


class RunPass:
    """`with RunPass(run_id, workflow) as run_pass:` around one execution of a run."""

    __slots__ = ("_run_id", "_span", "_token", "_workflow", "outcome")

    def __init__(self, run_id: uuid.UUID, workflow: str) -> None:
        self.outcome = "failed"
        self._run_id = run_id
        self._workflow = workflow
        self._token: Any = None
        self._span: tracing.OpenSpan | None = None

    def _attributes(self) -> dict[str, Any]:
        return {tracing.RUN_ID: str(self._run_id), tracing.WORKFLOW: self._workflow}

    def __enter__(self) -> RunPass:
        self._token = tracing.current_workflow.set(self._workflow)
        tracer = tracing.tracer()
        if tracer is not None:
            self._span = tracing.OpenSpan(tracer, "fanfold.run", self._attributes)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._span is not None:
            self._span.close(self.outcome)
        tracing.current_workflow.reset(self._token)
