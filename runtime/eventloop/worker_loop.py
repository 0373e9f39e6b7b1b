"""`WorkerLoop`: the event loop of a worker process, where its async step bodies run.

One long-lived loop per process, on a daemon thread of its own, whatever the Celery pool: a
prefork child and a threads worker alike hand their async bodies to it from their task threads
and wait on a `concurrent.futures.Future`. It starts on first use, and again in a forked child
(the prefork pool forks after import: the parent's loop thread does not exist in the child,
and `ProcessLocal` gives the child a state of its own). `close()` ends it at worker shutdown;
loops still running at interpreter exit are closed by an `atexit` hook.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextvars
import os
import threading
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TypeVar

from runtime import conf
from runtime.eventloop.body import Body, BodyFactory, BodyTag
from runtime.eventloop.errors import WorkerLoopClosed
from runtime.eventloop.loop_thread import LoopThread
from runtime.process.local import ProcessLocal

T = TypeVar("T")

ATEXIT_TIMEOUT = 2.0


@dataclass
class _ProcessState:
    lock: threading.Lock = field(default_factory=threading.Lock)
    thread: LoopThread | None = None
    closed: bool = False


class WorkerLoop:
    """Runs async bodies on this process's event loop thread, at most `concurrency` at once.

    `concurrency` and `lag_warning` default to FANFOLD_ASYNC_CONCURRENCY and
    FANFOLD_ASYNC_LAG_WARNING, read when the loop starts.
    """

    def __init__(
        self,
        *,
        concurrency: int | None = None,
        lag_warning: float | None = None,
        name: str = "fanfold-eventloop",
    ) -> None:
        if concurrency is not None and concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.name = name
        self._concurrency = concurrency
        self._lag_warning = lag_warning
        self._state: ProcessLocal[_ProcessState] = ProcessLocal(_ProcessState)

    def submit(
        self,
        body: BodyFactory[T],
        *,
        key: Hashable,
        label: str,
        timeout: float | None = None,
    ) -> concurrent.futures.Future[T]:
        """Run `body()` (an async function of no arguments) on the loop; return its future.

        Callable from any thread. The body starts when fewer than `concurrency` bodies run
        (in submission order) and sees the caller's context variables, copied now (the
        current step info among them). `key` groups it for `cancel(key)`; `label` (the step
        name) names it in loop-lag warnings; `timeout` bounds it from its start, after which
        it is cancelled and its future raises StepTimedOut. Cancelling the future cancels the
        body. Raises WorkerLoopClosed after `close()`.
        """
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        context = contextvars.copy_context()
        self._thread().submit(Body(body, BodyTag(key, label), timeout, future, context))
        return future

    def cancel(self, key: Hashable) -> concurrent.futures.Future[int]:
        """Cancel every queued and running body submitted with `key`: a running one sees
        `asyncio.CancelledError` where it awaits, and every one's future reports cancellation.
        Returns at once; the returned future says how many bodies were cancelled."""
        thread = self._running_thread()
        if thread is None:
            done: concurrent.futures.Future[int] = concurrent.futures.Future()
            done.set_result(0)
            return done
        return thread.cancel(key)

    def close(self, timeout: float = 5.0) -> None:
        """Cancel what runs and waits, give it `timeout` seconds, and end the loop thread.

        For worker shutdown: this process's loop takes no more bodies afterwards (a forked
        child's loop is its own and starts as usual).
        """
        state = self._state.get()
        with state.lock:
            state.closed = True
            thread, state.thread = state.thread, None
        if thread is not None:
            thread.stop(timeout)
            _live.discard(thread)

    @property
    def running(self) -> bool:
        """Whether this process's loop thread is running."""
        thread = self._running_thread()
        return thread is not None and thread.alive

    def _running_thread(self) -> LoopThread | None:
        if not self._state.built():
            return None
        state = self._state.get()
        with state.lock:
            return state.thread

    def _thread(self) -> LoopThread:
        state = self._state.get()
        with state.lock:
            if state.closed:
                raise WorkerLoopClosed("the worker's event loop is closed")
            if state.thread is None or state.thread.crashed:
                concurrency, lag_warning = self._limits()
                state.thread = LoopThread(self.name, concurrency, lag_warning)
                _live.add(state.thread)
            return state.thread

    def _limits(self) -> tuple[int, float]:
        if self._concurrency is not None and self._lag_warning is not None:
            return self._concurrency, self._lag_warning
        settings = conf.get()
        return (
            self._concurrency or settings.ASYNC_CONCURRENCY,
            settings.ASYNC_LAG_WARNING if self._lag_warning is None else self._lag_warning,
        )


# Loop threads started in this process, closed at interpreter exit. A forked child inherits
# the parent's entries and leaves them alone: their threads do not exist there, and keeping
# the objects spares the child closing (or collecting) a loop another process runs.
_live: set[LoopThread] = set()


def _close_live_threads() -> None:
    pid = os.getpid()
    for thread in list(_live):
        if thread.pid == pid:
            thread.stop(ATEXIT_TIMEOUT)
            _live.discard(thread)


atexit.register(_close_live_threads)

_process_loop = WorkerLoop()


def worker_loop() -> WorkerLoop:
    """This process's worker loop (its thread starts on the first `submit`)."""
    return _process_loop
