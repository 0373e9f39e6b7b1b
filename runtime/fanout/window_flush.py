"""A window's waiting reports committed while a later body of the window runs on.

A chunk (runtime.fanout.chunk_window) commits the reports of its window's bodies after the
window's last body. A body that runs long (one that waits on a service, or is held, or a
process the scheduler paused) would keep the reports of the bodies before it uncommitted for
as long as it runs: their branches not counted, their results not durable, their bodies run
again if the worker died meanwhile. So before each body that has reports waiting, the chunk
hands them to this process's flusher with a deadline: when the window's unreported body time,
the running body's included, reaches AT_RISK_SECONDS. If the body still runs then, the
flusher's thread commits them (through the checkpoint writer, as the chunk would) and gives
their leases back; once the body has ended the chunk takes the receipts back and acts on them
(the release and resume messages are published from the chunk's thread, as always). A body
that ends first takes its reports back unwritten: quick bodies cost no commit of their own.

One thread a process, started by the first hand-over (again in a forked child) and retired
after IDLE_SECONDS without any; a process that runs chunks on several threads shares it.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from time import perf_counter

from runtime.core.branches import BranchAttempt, BranchReport
from runtime.fanout.report import commit_window
from runtime.store.connection import close_thread_connections
from runtime.store.fanout.branch_writes import ReportReceipts

Completed = tuple[BranchAttempt, BranchReport]
IDLE_SECONDS = 1.0  # the thread retires after this long with nothing handed to it


@dataclass(eq=False)
class Waiting:
    """Reports handed over while a body runs: committed by the flusher once `deadline` (a
    perf_counter time) passes, unless taken back first."""

    completed: list[Completed]
    deadline: float
    taken: bool = False  # the flusher took them: the chunk must not commit them again
    done: bool = False
    written: ReportReceipts | None = None
    error: BaseException | None = field(default=None, repr=False)


class WindowFlusher:
    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        # A forked child has the objects but not the thread (nor a usable lock): anew.
        self._pid = os.getpid()
        self._cond = threading.Condition()
        self._waiting: set[Waiting] = set()
        self._thread: threading.Thread | None = None
        self._wakes_at = math.inf  # when the thread's wait ends, as it waits now

    def hand_over(self, completed: Sequence[Completed], seconds: float) -> Waiting:
        """Hand the reports over, to be committed if the caller's body still runs in
        `seconds`; the caller takes them back (`take_back`) when its body ends."""
        if self._pid != os.getpid():
            self._reset()
        waiting = Waiting(list(completed), perf_counter() + max(seconds, 0.0))
        with self._cond:
            self._waiting.add(waiting)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="fanfold-window-flush", daemon=True
                )
                self._thread.start()
            elif waiting.deadline < self._wakes_at:
                self._cond.notify_all()  # the thread waits for work or a later deadline
        return waiting

    def take_back(self, waiting: Waiting) -> ReportReceipts | None:
        """None if the reports were still waiting (they are the caller's again); else the
        receipts of their commit, once it is over. Raises the commit's error."""
        with self._cond:
            if not waiting.taken:
                self._waiting.discard(waiting)
                return None
            while not waiting.done:
                self._cond.wait()
        if waiting.error is not None:
            raise waiting.error
        return waiting.written

    def _run(self) -> None:
        try:
            while (due := self._next_due()) is not None:
                self._flush(due)
        finally:
            close_thread_connections()  # if the writer ran a commit on this thread's

    def _next_due(self) -> Waiting | None:
        """Wait for the first reports whose deadline passed and take them; None: retire."""
        with self._cond:
            while True:
                if not self._waiting:
                    self._cond.wait(IDLE_SECONDS)  # any hand-over wakes it (_wakes_at: inf)
                    if not self._waiting:
                        self._thread = None  # the next hand-over starts a new thread
                        return None
                    continue
                first = min(self._waiting, key=lambda w: w.deadline)
                left = first.deadline - perf_counter()
                if left <= 0:
                    self._waiting.discard(first)
                    first.taken = True
                    return first
                self._wait_until(first.deadline)

    def _wait_until(self, deadline: float) -> None:
        """Wait (the lock held) until `deadline`, or a hand-over due before it."""
        self._wakes_at = deadline
        self._cond.wait(max(deadline - perf_counter(), 0.0))
        self._wakes_at = math.inf

    def _flush(self, waiting: Waiting) -> None:
        try:
            waiting.written = commit_window(waiting.completed)
        except BaseException as exc:  # the chunk's thread raises it
            waiting.error = exc
            close_thread_connections()
        finally:
            with self._cond:
                waiting.done = True
                self._cond.notify_all()


window_flusher = WindowFlusher()
