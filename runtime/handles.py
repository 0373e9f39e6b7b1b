"""`start`, `get_run` and the RunHandle they return: the Python face of a run."""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Awaitable, Iterator
from datetime import timedelta
from typing import Any, Generic, TypeVar, overload

from asgiref.sync import sync_to_async

from runtime.core import wait_driver
from runtime.core.errors import InvalidArguments
from runtime.core.waiting import Waiting
from runtime.forks import fork_run, retry_run
from runtime.messaging.debounce import DebounceTerms, start_debounced
from runtime.messaging.values import get_value
from runtime.models import Event, Run, RunStatus, Step
from runtime.registry import WorkflowFunction
from runtime.selectors import events_of, run_status, steps_of, waiting_on
from runtime.services import cancel_run, get_run_row, start_run
from runtime.services.outcome import finished, outcome
from runtime.store.connection import closing_connections
from runtime.streaming import reader
from runtime.streaming.wakeups import fallback_seconds, signals
from runtime.streaming.writer import DEFAULT_STREAM
from runtime.updates.handle_calls import UpdateCalls

T = TypeVar("T")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class RunHandle(UpdateCalls, Generic[R_co]):
    """A reference to one run whose result is an `R_co` (`start(workflow_fn, ...)` knows it;
    `get_run(id)` does not: Any). Attribute reads go to the database, so they are fresh."""

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
        return run_status(self.id)

    @property
    def workflow(self) -> str:
        return self.refresh().workflow

    @property
    def result(self) -> R_co:
        """A finished run's result, read-only: a completed run's return value; a failed or
        cancelled run raises RunFailed / RunCancelled, as `wait()` does. Before the run has
        finished it raises RunNotFinished: `wait()` waits for the result."""
        return outcome(finished(self.refresh(), "result"))

    @property
    def error(self) -> dict[str, Any] | None:
        """A finished run's recorded error (`type`, `message`, ...), read-only: None for a
        completed or cancelled run. Before the run has finished it raises RunNotFinished."""
        run = finished(self.refresh(), "error")
        return (run.error or {}) if run.status == RunStatus.FAILED else None

    def wait(self, timeout: float | None = None, poll_interval: float | None = None) -> R_co:
        """Block until the run finishes; return its result or raise RunFailed / RunCancelled.

        Woken the moment the run finishes (a PostgreSQL notification, or a signal from the
        embedded worker in this process); `poll_interval` is only the fallback's period
        (default 1 s on PostgreSQL, 0.2 s elsewhere).
        Raises TimeoutError if it is still going after `timeout` seconds.
        """
        wait_driver.drive(self.id, timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        poll = poll_interval if poll_interval is not None else fallback_seconds()
        hub = signals()
        hub.watch(self.id)
        try:
            while True:
                seen = hub.seen(self.id)
                run = self.refresh()
                if run.is_finished:
                    result: R_co = outcome(run)
                    return result
                left = poll if deadline is None else deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"run {run.id} is still {run.status} after {timeout} s")
                hub.wait(self.id, seen, min(left, poll))
        finally:
            hub.unwatch(self.id)

    async def aresult(self, timeout: float | None = None) -> R_co:
        """`wait()` for async callers (a Django async view): the run's result, or the errors
        `wait` raises. The wait happens in a thread of its own, so the event loop goes on."""
        return await sync_to_async(closing_connections(self.wait), thread_sensitive=False)(timeout)

    async def acancel(self) -> None:
        """`cancel()` for async callers."""
        await sync_to_async(cancel_run)(self.id)

    def read_stream(
        self, name: str = DEFAULT_STREAM, after: int = 0, timeout: float | None = None
    ) -> Iterator[Any]:
        """The values of the run's stream `name` after seq `after` (seqs count from 1), as
        they are written; the iterator ends when the run finishes. Raises TimeoutError if the
        run is still going after `timeout` seconds."""
        return reader.read_stream(self.id, name, after, timeout)

    def get_value(self, key: str, wait: float | None = None) -> Any:
        """The latest committed value of `key` set by the run (`ctx.set_value`).

        Without `wait` raises ValueNotFound (a LookupError) if there is none; with `wait`
        (seconds) waits up to that long for a first one, woken when the run sets it, then
        raises TimeoutError.
        """
        return get_value(self.id, key, wait)

    def waiting_on(self) -> Waiting | None:
        """What the run waits for while it is suspended (`.kind`, `.name`, `.until`): a
        sleep, a callback, a message, a signal, an approval, a condition or children; None
        when it is not waiting."""
        return waiting_on(self.id)

    def cancel(self) -> None:
        """Cancel the run; raises RunAlreadyFinished if it has finished."""
        cancel_run(self.id)

    def retry(self) -> RunHandle[R_co]:
        """Fork this run from its first failed or cancelled step (raises NothingToRetry)."""
        return RunHandle(retry_run(self.id).id)

    def steps(self) -> list[Step]:
        return steps_of(self.id)

    def events(self, after: int = 0) -> list[Event]:
        return events_of(self.id, after)


# `start(fn, ...)` knows the run's result type; its arguments go unchecked (a ParamSpec cannot
# be followed by the keyword options).
@overload
def start(
    workflow: WorkflowFunction[..., Awaitable[R]], *args: Any, idempotency_key: str | None = ...,
    concurrency_key: str | None = ..., priority: int = ..., owner: Any = ...,
    debounce: float | timedelta | None = ..., debounce_key: str | None = ...,
    debounce_max_wait: float | timedelta | None = ..., **kwargs: Any,
) -> RunHandle[R]: ...  # fmt: skip
@overload
def start(
    workflow: WorkflowFunction[..., R], *args: Any, idempotency_key: str | None = ...,
    concurrency_key: str | None = ..., priority: int = ..., owner: Any = ...,
    debounce: float | timedelta | None = ..., debounce_key: str | None = ...,
    debounce_max_wait: float | timedelta | None = ..., **kwargs: Any,
) -> RunHandle[R]: ...  # fmt: skip


@overload
def start(
    workflow: str, *args: Any, idempotency_key: str | None = ..., concurrency_key: str | None = ...,
    priority: int = ..., owner: Any = ..., debounce: float | timedelta | None = ...,
    debounce_key: str | None = ..., debounce_max_wait: float | timedelta | None = ...,
    **kwargs: Any,
) -> RunHandle[Any]: ...  # fmt: skip


def start(
    workflow: str | WorkflowFunction[..., Any],
    *args: Any,
    idempotency_key: str | None = None,
    concurrency_key: str | None = None,
    priority: int = 0,
    owner: Any = None,
    debounce: float | timedelta | None = None,
    debounce_key: str | None = None,
    debounce_max_wait: float | timedelta | None = None,
    search: dict[str, Any] | None = None,
    **kwargs: Any,
) -> RunHandle[Any]:
    """Start a run of `workflow` (a name or the decorated function) with these arguments.

    `concurrency_key` picks the slots of a workflow with `concurrency=N`; `priority` (0-9,
    higher first) orders admission and pending work. `owner` (a user) owns the run: they see
    and act on it in the API and the admin, and its idempotency key is theirs (a repeated key
    with other arguments raises IdempotencyConflict). No permission is checked here: Python
    callers act as the operator. With `debounce` and `debounce_key`, starts with one key (of
    one owner) coalesce into one run that begins `debounce` after the last of them
    (at the latest `debounce_max_wait` after the first) with the last start's arguments;
    every call returns that run's handle. `search={"customer": 42}` sets the run's search
    attributes, as the workflow declares them (docs/finding-runs.md).
    """
    if debounce is not None or debounce_key is not None or debounce_max_wait is not None:
        if idempotency_key is not None or concurrency_key is not None or search is not None:
            raise InvalidArguments("debounce takes no idempotency_key, concurrency_key or search")
        terms = DebounceTerms.of(debounce, debounce_key, debounce_max_wait)
        owner_id = owner if owner is None or isinstance(owner, int) else owner.pk
        run, created = start_debounced(workflow, args, kwargs, terms, priority, owner_id)
        return RunHandle(run.id, created)
    run, created = start_run(
        workflow,
        args,
        kwargs,
        idempotency_key=idempotency_key,
        concurrency_key=concurrency_key,
        priority=priority,
        owner=owner,
        search=search,
    )
    return RunHandle(run.id, created)


def fork(
    run_id: uuid.UUID | str,
    from_position: int,
    args: list[Any] | None = None,
    kwargs: dict[str, Any] | None = None,
) -> RunHandle[Any]:
    """A new run whose history starts with `run_id`'s records before `from_position`.

    Those records are copied as recorded, not run again; position `from_position` on runs
    anew, with `args` / `kwargs` instead of the source's when given. The source is unchanged.
    """
    return RunHandle(fork_run(run_id, from_position, args, kwargs).id)


def get_run(run_id: uuid.UUID | str) -> RunHandle[Any]:
    """A handle to an existing run; raises RunNotFound."""
    return RunHandle(get_run_row(run_id).id, created=False)


@overload
async def astart(
    workflow: WorkflowFunction[..., Awaitable[R]], *args: Any, idempotency_key: str | None = ...,
    concurrency_key: str | None = ..., priority: int = ..., owner: Any = ...,
    debounce: float | timedelta | None = ..., debounce_key: str | None = ...,
    debounce_max_wait: float | timedelta | None = ..., **kwargs: Any,
) -> RunHandle[R]: ...  # fmt: skip
@overload
async def astart(
    workflow: WorkflowFunction[..., R], *args: Any, idempotency_key: str | None = ...,
    concurrency_key: str | None = ..., priority: int = ..., owner: Any = ...,
    debounce: float | timedelta | None = ..., debounce_key: str | None = ...,
    debounce_max_wait: float | timedelta | None = ..., **kwargs: Any,
) -> RunHandle[R]: ...  # fmt: skip


@overload
async def astart(
    workflow: str, *args: Any, idempotency_key: str | None = ..., concurrency_key: str | None = ...,
    priority: int = ..., owner: Any = ..., debounce: float | timedelta | None = ...,
    debounce_key: str | None = ..., debounce_max_wait: float | timedelta | None = ...,
    **kwargs: Any,
) -> RunHandle[Any]: ...  # fmt: skip


async def astart(
    workflow: str | WorkflowFunction[..., Any],
    *args: Any,
    idempotency_key: str | None = None,
    concurrency_key: str | None = None,
    priority: int = 0,
    owner: Any = None,
    debounce: float | timedelta | None = None,
    debounce_key: str | None = None,
    debounce_max_wait: float | timedelta | None = None,
    search: dict[str, Any] | None = None,
    **kwargs: Any,
) -> RunHandle[Any]:
    """`start` for async callers (debounced starts too): the run is started (and committed) in
    Django's thread-sensitive thread, as the async ORM does its work."""
    begin = functools.partial(
        start,
        workflow,
        *args,
        idempotency_key=idempotency_key,
        concurrency_key=concurrency_key,
        priority=priority,
        owner=owner,
        debounce=debounce,
        debounce_key=debounce_key,
        debounce_max_wait=debounce_max_wait,
        search=search,
        **kwargs,
    )
    return await sync_to_async(begin)()


async def aget_run(run_id: uuid.UUID | str) -> RunHandle[Any]:
    """`get_run` for async callers; raises RunNotFound."""
    return await sync_to_async(get_run)(run_id)
