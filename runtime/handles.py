"""`start`, `get_run` and the RunHandle they return: the Python face of a run."""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.db import connections

from runtime.core.errors import InvalidArguments, RunCancelled, RunFailed
from runtime.core.waiting import Waiting
from runtime.forks import fork_run, retry_run
from runtime.messaging.debounce import DebounceTerms, start_debounced
from runtime.messaging.values import get_value
from runtime.models import Event, Run, RunStatus, Step
from runtime.registry import WorkflowFunction
from runtime.selectors import events_of, run_status, steps_of, waiting_on
from runtime.services import cancel_run, get_run_row, start_run
from runtime.streaming import reader
from runtime.streaming.wakeups import fallback_seconds, signals
from runtime.streaming.writer import DEFAULT_STREAM

T = TypeVar("T")

# Drives runs in this thread while a caller waits (runtime.testing's WorkflowEnvironment):
# called with the run's id and the wait's timeout, it returns once the run finished, or raises.
Driver = Callable[[uuid.UUID, float | None], None]
_driver: Driver | None = None


def install_driver(driver: Driver | None) -> Driver | None:
    """Make `RunHandle.wait()` call `driver` first; returns the one it replaces."""
    global _driver
    previous, _driver = _driver, driver
    return previous


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
        return run_status(self.id)

    @property
    def workflow(self) -> str:
        return self.refresh().workflow

    def wait(self, timeout: float | None = None, poll_interval: float | None = None) -> Any:
        """Block until the run finishes; return its result or raise RunFailed / RunCancelled.

        Woken the moment the run finishes (a PostgreSQL notification, or a signal from the
        embedded worker in this process); `poll_interval` is only the fallback's period
        (default 1 s on PostgreSQL, 0.2 s elsewhere).
        Raises TimeoutError if it is still going after `timeout` seconds.
        """
        if _driver is not None:
            _driver(self.id, timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        poll = poll_interval if poll_interval is not None else fallback_seconds()
        hub = signals()
        hub.watch(self.id)
        try:
            while True:
                seen = hub.seen(self.id)
                run = self.refresh()
                if run.is_finished:
                    return _outcome(run)
                left = poll if deadline is None else deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"run {run.id} is still {run.status} after {timeout} s")
                hub.wait(self.id, seen, min(left, poll))
        finally:
            hub.unwatch(self.id)

    async def aresult(self, timeout: float | None = None) -> Any:
        """`wait()` for async callers (a Django async view): the run's result, or the errors
        `wait` raises. The wait happens in a thread of its own, so the event loop goes on."""
        return await sync_to_async(_closing(self.wait), thread_sensitive=False)(timeout)

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

    def retry(self) -> RunHandle:
        """Fork this run from its first failed or cancelled step (raises NothingToRetry)."""
        return RunHandle(retry_run(self.id).id)

    def steps(self) -> list[Step]:
        return steps_of(self.id)

    def events(self, after: int = 0) -> list[Event]:
        return events_of(self.id, after)


def _closing(fn: Callable[..., T]) -> Callable[..., T]:
    """`fn`, closing the database connections of the thread it ran in (a thread of
    asgiref's pool, which Django never closes on its own)."""

    @functools.wraps(fn)
    def closing(*args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        finally:
            connections.close_all()

    return closing


def _outcome(run: Run) -> Any:
    if run.status == RunStatus.COMPLETED:
        return run.result
    if run.status == RunStatus.FAILED:
        error = run.error or {}
        kind, message = error.get("type", "Error"), error.get("message", "")
        raise RunFailed(f"run {run.id} failed: {kind}: {message}", error)
    raise RunCancelled(f"run {run.id} was cancelled")


def start(
    workflow: str | WorkflowFunction[Any],
    *args: Any,
    idempotency_key: str | None = None,
    concurrency_key: str | None = None,
    priority: int = 0,
    owner: Any = None,
    debounce: float | timedelta | None = None,
    debounce_key: str | None = None,
    debounce_max_wait: float | timedelta | None = None,
    **kwargs: Any,
) -> RunHandle:
    """Start a run of `workflow` (a name or the decorated function) with these arguments.

    `concurrency_key` picks the slots of a workflow with `concurrency=N`; `priority` (0-9,
    higher first) orders admission and pending work. `owner` (a user) owns the run: they see
    and act on it in the API and the admin, and its idempotency key is theirs (a repeated key
    with other arguments raises IdempotencyConflict). No permission is checked here: Python
    callers act as the operator. With `debounce` and `debounce_key`, starts with one key (of
    one owner) coalesce into one run that begins `debounce` after the last of them
    (at the latest `debounce_max_wait` after the first) with the last start's arguments;
    every call returns that run's handle.
    """
    if debounce is not None or debounce_key is not None or debounce_max_wait is not None:
        if idempotency_key is not None or concurrency_key is not None:
            raise InvalidArguments("debounce takes no idempotency_key or concurrency_key")
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
    )
    return RunHandle(run.id, created)


def fork(
    run_id: uuid.UUID | str,
    from_position: int,
    args: list[Any] | None = None,
    kwargs: dict[str, Any] | None = None,
) -> RunHandle:
    """A new run whose history starts with `run_id`'s records before `from_position`.

    Those records are copied as recorded, not run again; position `from_position` on runs
    anew, with `args` / `kwargs` instead of the source's when given. The source is unchanged.
    """
    return RunHandle(fork_run(run_id, from_position, args, kwargs).id)


def get_run(run_id: uuid.UUID | str) -> RunHandle:
    """A handle to an existing run; raises RunNotFound."""
    return RunHandle(get_run_row(run_id).id, created=False)


async def astart(
    workflow: str | WorkflowFunction[Any],
    *args: Any,
    idempotency_key: str | None = None,
    concurrency_key: str | None = None,
    priority: int = 0,
    owner: Any = None,
    debounce: float | timedelta | None = None,
    debounce_key: str | None = None,
    debounce_max_wait: float | timedelta | None = None,
    **kwargs: Any,
) -> RunHandle:
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
        **kwargs,
    )
    return await sync_to_async(begin)()


async def aget_run(run_id: uuid.UUID | str) -> RunHandle:
    """`get_run` for async callers; raises RunNotFound."""
    return await sync_to_async(get_run)(run_id)
