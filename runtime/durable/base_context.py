"""What a sync and an async workflow's `ctx` share: the run's replay cursor and the calls that
return at once in both (the deterministic helpers).

`runtime.context.DurableContext` (a sync workflow's) and `runtime.async_context
.AsyncDurableContext` (an `async def` workflow's) are siblings over this base: each says how
its calls that wait are made (at once, or as an awaited call), neither is a kind of the other.
"""

from __future__ import annotations

import itertools
import logging
import random as _random
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TypeVar

from runtime import conf
from runtime.core import history
from runtime.core.clock import Clock
from runtime.core.identity import deterministic_uuid
from runtime.durable import calls
from runtime.durable.cursor import ReplayCursor
from runtime.durable.markers import patched
from runtime.durable.session import ExecutionSession

log = logging.getLogger("fanfold.workflow")

C = TypeVar("C", bound="WorkflowContextBase")


class _ReplayAwareLogger(logging.LoggerAdapter[logging.Logger]):
    def __init__(self, ctx: WorkflowContextBase) -> None:
        super().__init__(log, {"run_id": str(ctx.run_id)})
        self._ctx = ctx

    def isEnabledFor(self, level: int) -> bool:
        return not self._ctx.is_replaying and super().isEnabledFor(level)


def sleep_seconds(duration: float | timedelta) -> float:
    """`ctx.sleep`'s duration in seconds; a negative or non-numeric one is refused."""
    seconds = duration.total_seconds() if isinstance(duration, timedelta) else duration
    if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0:
        raise ValueError("ctx.sleep takes a non-negative number of seconds or a timedelta")
    return float(seconds)


class WorkflowContextBase:
    """The replay cursor of one run pass, its random source and `uuid4` counter, and the
    helpers that answer the same on every replay."""

    def __init__(
        self,
        session: ExecutionSession,
        recorded: dict[int, history.RecordedStep],
        clock: Clock,
        rand: Callable[[], float] = _random.random,
        *,
        cursor: ReplayCursor | None = None,
    ) -> None:
        self.cursor = cursor or ReplayCursor(session, recorded, clock, conf.get().MAX_PAYLOAD_BYTES)
        self._clock = clock
        self._rand = rand  # retry jitter and ctx.random(): replaced by tests
        self._uuids = itertools.count(1)
        self.logger: logging.LoggerAdapter[logging.Logger] = _ReplayAwareLogger(self)

    def resume_pass(
        self, session: ExecutionSession, clock: Clock, news: list[history.RecordedStep]
    ) -> None:
        """Carry a parked workflow's context into a new pass (runtime.warm): its session and
        clock, and the records read since it parked."""
        self.cursor.resume_pass(session, clock, news)
        self._clock = clock

    def sibling(self, kind: type[C]) -> C:
        """A context of class `kind` over this one's cursor (positions, history, writes), random
        source and `uuid4` counter: an async view of a sync workflow's `ctx`, for async code the
        sync workflow runs to its end (runtime.workflow_call.run_async_from_sync)."""
        cursor = self.cursor
        other = kind(cursor.session, {}, cursor.clock, self._rand, cursor=cursor)
        other._uuids = self._uuids
        return other

    @property
    def run_id(self) -> uuid.UUID:
        return self.cursor.run_id

    @property
    def is_replaying(self) -> bool:
        """True while the workflow re-executes positions the history already holds."""
        return self.cursor.is_replaying

    @property
    def fatal(self) -> BaseException | None:
        """The error that fails the run even though workflow code caught it, if any."""
        return self.cursor.fatal

    def now(self) -> datetime:
        """The current time, recorded so that replay sees the same value."""
        return datetime.fromisoformat(
            calls.record_value(self.cursor, "ctx.now", lambda: self._clock.now().isoformat())
        )

    def uuid4(self) -> uuid.UUID:
        """A UUID derived from the run and a call counter: the same on every replay."""
        return deterministic_uuid(self.run_id, next(self._uuids))

    def random(self) -> float:
        """A float in [0, 1), recorded so that replay sees the same value."""
        return float(calls.record_value(self.cursor, "ctx.random", self._rand))

    def patched(self, patch_id: str) -> bool:
        """True on new code paths: a run that reaches this call for the first time records a
        marker and gets True; a run whose history passed here without it gets False."""
        return patched(self.cursor, patch_id)
