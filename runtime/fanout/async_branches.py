"""Async branch bodies: many in flight in one worker process, on its event loop.

A branch whose step is `async def` is claimed in the task's thread like any other; its body
then runs on the process's worker loop (runtime.eventloop) and the task returns ("started"),
so a prefork child with two pool slots runs up to FANFOLD_ASYNC_CONCURRENCY bodies at once. A
slot of that bound is taken before a claimed branch is handed over and given back once its
report has committed: a task thread waits for a free slot, so a process never holds more
claimed branches than it can run. Reports are written by a thread of the process (never on
the loop): the completions that finished while the last commit was under way commit
together, in one batch.

The branch's lease is held from its claim until its report commits, as for a sync body, so a
worker that dies with bodies in flight leaves their leases to the takeover and the next
attempts run elsewhere. Cancelling a run cancels its bodies in flight here: a watcher looks
each second at the runs whose bodies this process runs and cancels the bodies of those no
longer active (the body sees `asyncio.CancelledError`; nothing is reported, the cancel has
settled the steps). A worker's warm shutdown waits for the bodies in flight (`drain`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import queue
import threading
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from asgiref.sync import SyncToAsync, ThreadSensitiveContext, sync_to_async
from django.db import connections

from runtime import conf
from runtime.core.branches import BranchAttempt, ClaimedBranch
from runtime.core.retry import RetryPolicy
from runtime.durable.body import BodyCall, BodyOutcome, StepBody
from runtime.eventloop import worker_loop
from runtime.fanout.report import record_completions, record_outcome
from runtime.leases.keepers import branch_leases
from runtime.process.background import BackgroundLoop
from runtime.process.local import ProcessLocal
from runtime.store.runs.run_rows import finished_among

log = logging.getLogger("fanfold.branches")

WATCH_INTERVAL = 1.0
MAX_REPORTS_PER_BATCH = 500


@dataclass(frozen=True)
class _Ended:
    """A body that ended, waiting for its report: where to hand the report's label back."""

    branch: BranchAttempt
    claimed: ClaimedBranch
    outcome: BodyOutcome
    policy: RetryPolicy
    loop: asyncio.AbstractEventLoop
    reported: asyncio.Future[str]


class _Reporter:
    """The thread that writes the reports of this process's async branches, many a commit."""

    def __init__(self) -> None:
        self._ended: queue.SimpleQueue[_Ended] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="fanfold-branch-reports",
                                        daemon=True)  # fmt: skip
        self._thread.start()

    def put(self, ended: _Ended) -> None:
        self._ended.put(ended)

    def _run(self) -> None:
        while True:
            batch = [self._ended.get()]
            while len(batch) < MAX_REPORTS_PER_BATCH:
                try:
                    batch.append(self._ended.get_nowait())
                except queue.Empty:
                    break
            completed = [e for e in batch if e.outcome.ok]
            _hand_back(completed, functools.partial(_completion_labels, completed))
            for e in batch:
                if not e.outcome.ok:
                    _hand_back([e], functools.partial(_failure_labels, e))


def _completion_labels(completed: list[_Ended]) -> list[str]:
    return record_completions([(e.branch, e.claimed, e.outcome) for e in completed])


def _failure_labels(e: _Ended) -> list[str]:
    return [record_outcome(e.branch, e.claimed, e.outcome, e.policy).label]


def _hand_back(ended: list[_Ended], write: Callable[[], list[str]]) -> None:
    """Write reports, then resolve each body's wait for its label (or the write's error)."""
    if not ended:
        return
    try:
        labels: list[str] | BaseException = write()
    except Exception as exc:  # a failed commit: each body's report failed with it
        labels = exc
    for index, e in enumerate(ended):
        result = labels if isinstance(labels, BaseException) else labels[index]
        e.loop.call_soon_threadsafe(_resolve, e.reported, result)


def _resolve(reported: asyncio.Future[str], result: str | BaseException) -> None:
    if reported.done():
        return  # the body was cancelled meanwhile
    if isinstance(result, BaseException):
        reported.set_exception(result)
    else:
        reported.set_result(result)


@dataclass
class _InFlight:
    """This process's async branches: the bound, the reporter, the runs they serve."""

    slots: threading.BoundedSemaphore
    reporter: _Reporter
    lock: threading.Lock = field(default_factory=threading.Lock)
    runs: Counter[uuid.UUID] = field(default_factory=Counter)
    idle: threading.Event = field(default_factory=threading.Event)


def _in_flight() -> _InFlight:
    state = _InFlight(threading.BoundedSemaphore(conf.get().ASYNC_CONCURRENCY), _Reporter())
    state.idle.set()
    return state


_state: ProcessLocal[_InFlight] = ProcessLocal(_in_flight)


def start(
    branch: BranchAttempt,
    claimed: ClaimedBranch,
    call: BodyCall,
    policy: RetryPolicy,
    traceparent: str | None = None,
) -> str:
    """Hand a claimed async branch to the worker loop (waiting for a free slot first); its
    report follows when the body ends. Returns "started"."""
    state = _state.get()
    state.slots.acquire()
    branch_leases.hold(branch.lease_key)
    with state.lock:
        state.runs[branch.run_id] += 1
        state.idle.clear()
    watcher.start()
    lease = _Lease(branch.lease_key)
    body = functools.partial(_run, branch, claimed, call, policy, traceparent, lease, state)
    try:
        future = worker_loop().submit(body, key=branch.run_id, label=claimed.name)
    except BaseException:
        _settled(state, branch, lease, None)
        raise
    future.add_done_callback(functools.partial(_settled, state, branch, lease))
    return "started"


@dataclass
class _Lease:
    """A branch's lease as this module holds it: given back once, by the report or here."""

    key: tuple[uuid.UUID, uuid.UUID]  # BranchAttempt.lease_key
    handed_to_report: bool = False

    def give_back(self) -> None:
        if not self.handed_to_report:
            branch_leases.release(self.key)


async def _run(
    branch: BranchAttempt,
    claimed: ClaimedBranch,
    call: BodyCall,
    policy: RetryPolicy,
    traceparent: str | None,
    lease: _Lease,
    state: _InFlight,
) -> str:
    with StepBody(call, traceparent) as body:
        # Django's async ORM calls of this body run in a thread of its own (made on first
        # use), whose connection is closed when the body ends.
        async with ThreadSensitiveContext() as orm_thread:
            outcome = await body.arun(conf.get().MAX_PAYLOAD_BYTES)
            if orm_thread in SyncToAsync.context_to_thread_executor:
                await sync_to_async(connections.close_all)()
        loop = asyncio.get_running_loop()
        reported: asyncio.Future[str] = loop.create_future()
        lease.handed_to_report = True  # the report gives the lease back, whatever happens
        state.reporter.put(_Ended(branch, claimed, outcome, policy, loop, reported))
        body.outcome = await asyncio.shield(reported)
        return body.outcome


def _settled(
    state: _InFlight,
    branch: BranchAttempt,
    lease: _Lease,
    future: concurrent.futures.Future[str] | None,
) -> None:
    lease.give_back()  # unless its report did: a body cancelled or broken before it
    if future is not None and not future.cancelled() and future.exception() is not None:
        log.error("run %s: async branch %s failed outside its body", branch.run_id,
                  branch.position, exc_info=future.exception())  # fmt: skip
    with state.lock:
        state.runs[branch.run_id] -= 1
        if state.runs[branch.run_id] <= 0:
            del state.runs[branch.run_id]
        if not state.runs:
            state.idle.set()
    state.slots.release()


def running_runs() -> list[uuid.UUID]:
    """The runs with async branch bodies in flight in this process."""
    state = _state.get()
    with state.lock:
        return list(state.runs)


def cancel_finished_runs() -> int:
    """Cancel the bodies in flight of runs that are no longer active; how many runs."""
    runs = running_runs()
    if not runs:
        return 0
    finished = finished_among(list(runs))
    for run_id in finished:
        worker_loop().cancel(run_id)
    return len(finished)


def drain(timeout: float) -> bool:
    """Wait up to `timeout` seconds for this process's async bodies and their reports to
    end (a warm shutdown); True if none is left."""
    return _state.get().idle.wait(max(timeout, 0.0))


watcher = BackgroundLoop("fanfold-async-cancel", lambda: WATCH_INTERVAL, cancel_finished_runs)
