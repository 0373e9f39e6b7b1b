"""The loop-lag monitor: notices a body that holds the event loop, and names it.

A periodic tick measures how late it runs; a late tick means something held the loop. The tick
itself cannot see who did (it runs after the culprit returned), so every task a body starts,
the body's own and any it spawns (`asyncio.gather`, `create_task`, a `TaskGroup`), gets its
coroutine wrapped by the loop's task factory in a `TimedCoroutine` that times each step (one
`send` or `throw`, the code between two awaits). The slowest step since the previous tick is
the culprit the tick names. The cost is two clock reads per step; a profiler hook would
cost one call per Python function call instead.

The body a task belongs to is a `BodyTag` in a context variable: the worker loop sets it in
the context it runs the body in, and child tasks inherit a copy of that context.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import Coroutine, Generator
from typing import Any, TypeVar, cast

from runtime.eventloop.body import BodyTag

T = TypeVar("T")

log = logging.getLogger("fanfold.eventloop")

current_tag: contextvars.ContextVar[BodyTag | None] = contextvars.ContextVar(
    "fanfold_loop_body", default=None
)


class StepClock:
    """The slowest body step since the monitor last looked; used from the loop thread only."""

    def __init__(self) -> None:
        self._tag: BodyTag | None = None
        self._seconds = 0.0

    def record(self, tag: BodyTag, seconds: float) -> None:
        if seconds > self._seconds:
            self._tag, self._seconds = tag, seconds

    def take(self) -> tuple[BodyTag | None, float]:
        """The slowest step since the last take, and how long it ran; starts over."""
        taken = self._tag, self._seconds
        self._tag, self._seconds = None, 0.0
        return taken


class TimedCoroutine(Coroutine[Any, Any, T]):
    """Drives `coro` step by step as a task would, timing each step on `clock`."""

    __slots__ = ("_clock", "_coro", "_tag")

    def __init__(self, coro: Coroutine[Any, Any, T], tag: BodyTag, clock: StepClock) -> None:
        self._coro = coro
        self._tag = tag
        self._clock = clock

    def send(self, value: Any) -> Any:
        started = time.perf_counter()
        try:
            return self._coro.send(value)
        finally:
            self._clock.record(self._tag, time.perf_counter() - started)

    def throw(self, typ: Any, val: Any = None, tb: Any = None, /) -> Any:
        started = time.perf_counter()
        try:
            if val is None and tb is None:
                return self._coro.throw(typ)
            return self._coro.throw(typ, val, tb)  # the legacy three-argument form
        finally:
            self._clock.record(self._tag, time.perf_counter() - started)

    def close(self) -> None:
        self._coro.close()

    def __next__(self) -> Any:
        return self.send(None)

    def __iter__(self) -> TimedCoroutine[T]:
        return self

    def __await__(self) -> Generator[Any, None, T]:
        return cast(Generator[Any, None, T], self)  # an iterator with send and throw

    def __repr__(self) -> str:
        return f"<TimedCoroutine {self._tag.label!r} {self._coro!r}>"


class LagMonitor:
    """Ticks on `loop` every quarter of `threshold` seconds; a tick more than `threshold` late
    logs a warning naming the body step that held the loop, or, when no body step did, a
    line at INFO level (the process was busy elsewhere: no body to blame)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, threshold: float) -> None:
        self.clock = StepClock()
        self._loop = loop
        self._threshold = threshold
        self._interval = min(max(threshold / 4, 0.001), 1.0)
        self._handle: asyncio.TimerHandle | None = None

    def install(self) -> None:
        """On the loop thread, before any body runs: time body tasks and start ticking."""
        self._loop.set_task_factory(self._make_task)  # type: ignore[arg-type]
        self._schedule()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _schedule(self) -> None:
        due = self._loop.time() + self._interval
        self._handle = self._loop.call_at(due, self._tick, due)

    def _tick(self, due: float) -> None:
        lateness = self._loop.time() - due
        tag, held = self.clock.take()
        if lateness > self._threshold:
            self._warn(lateness, tag, held)
        self._schedule()  # from now, not from `due`: a long block gives one warning, not many

    def _warn(self, lateness: float, tag: BodyTag | None, held: float) -> None:
        if tag is not None and held >= lateness / 2:
            log.warning(
                "event loop blocked for %.3f s: step body %r (key %s) ran %.3f s without "
                "awaiting; blocking calls belong in asyncio.to_thread or an async library",
                lateness, tag.label, tag.key, held,
            )  # fmt: skip
        else:  # nothing to act on in one body: the process was busy (GIL, a collection)
            log.info(
                "event loop ran %.3f s late outside any step body (another thread holding "
                "the GIL, a garbage collection, or a loop callback)",
                lateness,
            )

    def _make_task(
        self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any], **kwargs: Any
    ) -> asyncio.Task[Any]:
        context: contextvars.Context | None = kwargs.get("context")
        tag = current_tag.get() if context is None else context.get(current_tag)
        if tag is not None and isinstance(coro, Coroutine):
            coro = TimedCoroutine(coro, tag, self.clock)
        return asyncio.Task(coro, loop=loop, **kwargs)
