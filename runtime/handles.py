"""`start`, `get_run` and the RunHandle they return: the Python face of a run."""

from __future__ import annotations

import time
import uuid
from typing import Any

from runtime.core.errors import RunCancelled, RunFailed
from runtime.models import Event, Run, RunStatus, Step
from runtime.registry import WorkflowFunction
from runtime.services import cancel_run, get_run_row, start_run


class RunHandle:
    """A reference to one run. Attribute reads go to the database, so they are always fresh."""

    def __init__(self, run_id: uuid.UUID, created: bool = True) -> None:
        self.id = run_id
        self.created = created

    def __repr__(self) -> str:
        return f"<RunHandle {self.id}>"

    def refresh(self) -> Run:
        """The run's row as it is now."""
        return get_run_row(self.id)

    @property
    def status(self) -> str:
        return str(Run.objects.filter(id=self.id).values_list("status", flat=True).get())

    @property
    def workflow(self) -> str:
        return self.refresh().workflow

    def wait(self, timeout: float | None = None, poll_interval: float = 0.02) -> Any:
        """Block until the run finishes; return its result or raise RunFailed / RunCancelled.

        Raises TimeoutError if it is still going after `timeout` seconds.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        interval = poll_interval
        while True:
            run = self.refresh()
            if run.status == RunStatus.COMPLETED:
                return run.result
            if run.status == RunStatus.FAILED:
                error = run.error or {}
                kind, message = error.get("type", "Error"), error.get("message", "")
                raise RunFailed(f"run {run.id} failed: {kind}: {message}", error)
            if run.status == RunStatus.CANCELLED:
                raise RunCancelled(f"run {run.id} was cancelled")
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"run {run.id} is still {run.status} after {timeout} s")
            time.sleep(interval)
            interval = min(interval * 1.5, 0.5)

    def cancel(self) -> None:
        """Cancel the run; raises RunAlreadyFinished if it has finished."""
        cancel_run(self.id)

    def steps(self) -> list[Step]:
        return list(Step.objects.filter(run_id=self.id).order_by("position"))

    def events(self, after: int = 0) -> list[Event]:
        return list(Event.objects.filter(run_id=self.id, seq__gt=after).order_by("seq"))


def start(
    workflow: str | WorkflowFunction[Any],
    *args: Any,
    idempotency_key: str | None = None,
    concurrency_key: str | None = None,
    priority: int = 0,
    **kwargs: Any,
) -> RunHandle:
    """Start a run of `workflow` (a name or the decorated function) with these arguments.

    `concurrency_key` picks the slots of a workflow with `concurrency=N`; `priority` (0-9,
    higher first) orders admission and pending work.
    """
    run, created = start_run(
        workflow,
        args,
        kwargs,
        idempotency_key=idempotency_key,
        concurrency_key=concurrency_key,
        priority=priority,
    )
    return RunHandle(run.id, created)


def get_run(run_id: uuid.UUID | str) -> RunHandle:
    """A handle to an existing run; raises RunNotFound."""
    return RunHandle(get_run_row(run_id).id, created=False)
