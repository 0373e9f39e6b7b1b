"""`LoopThread`: one asyncio event loop on a daemon thread, running bounded async bodies.

At most `concurrency` bodies run at once; the others wait in submission order and start as
running ones end. Everything that touches the queue and the running set happens on the loop
thread (submissions and cancellations arrive through `call_soon_threadsafe`), so none of it
needs a lock; the one lock orders submissions against `stop()`, so that no body is accepted
after the drain has begun and none waits forever.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import threading
from collections import deque
from collections.abc import Callable, Hashable
from functools import partial
from typing import Any, TypeVar

from runtime.eventloop.body import Body, bounded
from runtime.eventloop.errors import WorkerLoopClosed
from runtime.eventloop.lag import LagMonitor, current_tag

T = TypeVar("T")

log = logging.getLogger("fanfold.eventloop")


class LoopThread:
    """An event loop on a thread of its own in this process (`pid`), started at once."""

    def __init__(self, name: str, concurrency: int, lag_warning: float) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self._concurrency = concurrency
        self._queued: deque[Body] = deque()
        self._running: dict[Hashable, set[Body]] = {}
        self._running_count = 0
        self._monitor = LagMonitor(self.loop, lag_warning) if lag_warning > 0 else None
        self._lock = threading.Lock()
        self._closing = False
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, body: Body) -> None:
        """Queue `body` for the loop; raises WorkerLoopClosed once `stop()` has begun."""
        body.context.run(current_tag.set, body.tag)
        body.future.add_done_callback(partial(self._forward_cancel, body))
        with self._lock:
            if self._closing:
                raise WorkerLoopClosed("the worker's event loop is closed")
            self.loop.call_soon_threadsafe(self._admit, body)

    def cancel(self, key: Hashable) -> concurrent.futures.Future[int]:
        """Cancel the queued and running bodies of `key`; the future says how many (none once
        `stop()` has begun: the drain cancels them all)."""
        try:
            return self.call(self._cancel_key, key)
        except WorkerLoopClosed:
            nothing: concurrent.futures.Future[int] = concurrent.futures.Future()
            nothing.set_result(0)
            return nothing

    def call(self, fn: Callable[..., T], *args: Any) -> concurrent.futures.Future[T]:
        """Run `fn(*args)` on the loop thread; its outcome arrives in the returned future."""
        outcome: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if outcome.set_running_or_notify_cancel():
                try:
                    outcome.set_result(fn(*args))
                except BaseException as exc:  # the caller gets whatever happened
                    outcome.set_exception(exc)

        with self._lock:
            if self._closing:
                raise WorkerLoopClosed("the worker's event loop is closed")
            self.loop.call_soon_threadsafe(run)
        return outcome

    def stop(self, timeout: float) -> None:
        """Cancel every body, give them `timeout` seconds to end, and close the loop. From
        the loop thread itself (a body) it only begins the drain."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
            if self.loop.is_closed():  # the thread died (see `crashed`): nothing to drain
                return
            self.loop.call_soon_threadsafe(self._begin_drain, timeout)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout + 1.0)
            if self._thread.is_alive():
                log.warning("event loop thread %s did not stop in time", self._thread.name)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and not self._closing

    @property
    def crashed(self) -> bool:
        """The thread ended without `stop()`: a SystemExit raised by a loop callback, say."""
        return not self._thread.is_alive() and not self._closing

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        if self._monitor is not None:
            self._monitor.install()
        try:
            self.loop.run_forever()
        except BaseException:  # ends this thread only: the next submit starts another
            log.exception("event loop thread %s ended", self._thread.name)
        finally:
            self.loop.close()

    def _admit(self, body: Body) -> None:
        if body.future.cancelled():
            body.settle_cancelled()
            return
        if self._running_count < self._concurrency:
            self._start(body)
        else:
            self._queued.append(body)

    def _start(self, body: Body) -> None:
        self._running.setdefault(body.tag.key, set()).add(body)
        self._running_count += 1
        body.task = self.loop.create_task(self._drive(body), context=body.context)
        body.task.add_done_callback(partial(self._ended, body))

    async def _drive(self, body: Body) -> None:
        try:
            result = await bounded(body.factory(), body.timeout, body.tag.label)
        except (asyncio.CancelledError, GeneratorExit):
            raise
        except BaseException as exc:  # even SystemExit: it belongs to the submitting thread
            body.settle(error=exc)
        else:
            body.settle(result)

    def _ended(self, body: Body, task: asyncio.Task[None]) -> None:
        # A task cancelled before its first step never enters `_drive`, so the cancellation
        # is reported here; a settled future ignores it.
        body.settle_cancelled()
        self._finish(body)

    def _finish(self, body: Body) -> None:
        members = self._running.get(body.tag.key)
        if members is not None:
            members.discard(body)
            if not members:
                del self._running[body.tag.key]
        self._running_count -= 1
        while self._queued and self._running_count < self._concurrency:
            waiting = self._queued.popleft()
            if waiting.future.cancelled():
                waiting.settle_cancelled()
            else:
                self._start(waiting)

    def _cancel_key(self, key: Hashable) -> int:
        kept: deque[Body] = deque()
        cancelled = 0
        for body in self._queued:
            if body.tag.key == key:
                cancelled += not body.future.done()
                body.settle_cancelled()
            else:
                kept.append(body)
        self._queued = kept
        for body in self._running.get(key, ()):
            if body.task is not None and body.task.cancel():
                cancelled += 1
        return cancelled

    def _forward_cancel(self, body: Body, future: concurrent.futures.Future[Any]) -> None:
        """The future was cancelled (by its submitter, a time limit say): cancel the body. On
        the loop thread, so that a body starting meanwhile is cancelled all the same."""
        if not future.cancelled():
            return
        with contextlib.suppress(RuntimeError):  # a closed loop: nothing runs any more
            self.loop.call_soon_threadsafe(self._cancel_task, body)

    def _cancel_task(self, body: Body) -> None:
        if body.task is not None:
            body.task.cancel()
        else:  # still queued: its waiters hear now, and its turn is skipped
            body.settle_cancelled()

    def _begin_drain(self, timeout: float) -> None:
        self.loop.create_task(self._drain(timeout))

    async def _drain(self, timeout: float) -> None:
        for body in self._queued:
            body.settle_cancelled()
        self._queued.clear()
        tasks = [b.task for bs in self._running.values() for b in bs if b.task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            _, stubborn = await asyncio.wait(tasks, timeout=timeout)
            for bs in self._running.values():  # bodies that ignored the cancellation
                for body in bs:
                    body.settle_cancelled()
            if stubborn:
                log.warning("%d async bodies ignored cancellation at shutdown", len(stubborn))
        if self._monitor is not None:
            self._monitor.stop()
        await self.loop.shutdown_asyncgens()
        self.loop.stop()
