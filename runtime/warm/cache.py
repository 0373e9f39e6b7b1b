"""`WarmRuns`: the runs one worker thread keeps parked, least recently suspended first.

Per thread, because a greenlet resumes only in the thread that made it (a prefork worker's
process has one). A run leaves the cache when a pass takes it (to resume it or, if it no
longer fits the run, to drop it), when newer ones push it out, or when it is older than
WARM_RUN_SECONDS. Dropping one loses nothing: its run waits in the database as any suspended
run does, and the next resume replays it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from runtime import conf
from runtime.context import DurableContext
from runtime.core.history import RecordedStep
from runtime.durable.parking import ParkedWorkflow


@dataclass
class WarmRun:
    """A suspended run's parked workflow, and what it was started as."""

    run_id: uuid.UUID
    workflow: str
    app_version: str
    fn: Callable[..., Any]
    ctx: DurableContext
    parked: ParkedWorkflow
    parked_at: float = field(default_factory=time.monotonic)
    news: list[RecordedStep] = field(default_factory=list)  # read by the claim that took it

    def drop(self) -> None:
        self.parked.drop()


class WarmRuns:
    """At most `size` warm runs, none parked longer than `max_age` seconds ago."""

    def __init__(self, size: int, max_age: float) -> None:
        self.size = size
        self.max_age = max_age
        self._runs: OrderedDict[uuid.UUID, WarmRun] = OrderedDict()

    def __len__(self) -> int:
        return len(self._runs)

    def __contains__(self, run_id: uuid.UUID) -> bool:
        return run_id in self._runs

    def take(self, run_id: uuid.UUID) -> WarmRun | None:
        """The warm run `run_id`, out of the cache (None if not here or too old)."""
        self._expire()
        return self._runs.pop(run_id, None)

    def keep(self, warm: WarmRun) -> None:
        """Keep `warm` as the most recent; the oldest go past the bounds."""
        self.discard(warm.run_id)
        self._runs[warm.run_id] = warm
        self.trim()

    def trim(self) -> None:
        """Drop the oldest runs past the size bound, and those past the age bound."""
        while len(self._runs) > self.size:
            self._runs.popitem(last=False)[1].drop()
        self._expire()

    def discard(self, run_id: uuid.UUID) -> None:
        warm = self._runs.pop(run_id, None)
        if warm is not None:
            warm.drop()

    def clear(self) -> None:
        while self._runs:
            self._runs.popitem(last=False)[1].drop()

    def _expire(self) -> None:
        oldest = time.monotonic() - self.max_age
        while self._runs:
            warm = next(iter(self._runs.values()))
            if warm.parked_at >= oldest:
                return
            self._runs.popitem(last=False)[1].drop()


_local = threading.local()


def warm_runs() -> WarmRuns:
    """This thread's cache, at the bounds the settings give now."""
    settings = conf.get()
    runs: WarmRuns | None = getattr(_local, "runs", None)
    if runs is None:
        runs = _local.runs = WarmRuns(settings.WARM_RUNS, settings.WARM_RUN_SECONDS)
    elif (runs.size, runs.max_age) != (settings.WARM_RUNS, settings.WARM_RUN_SECONDS):
        runs.size, runs.max_age = settings.WARM_RUNS, settings.WARM_RUN_SECONDS
        runs.trim()
    return runs
