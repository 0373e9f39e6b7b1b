"""The runtime app's models: runs and their history, flow control, streams.

`from runtime.models import Run` and the other names below keep working whichever module of
the package defines them.
"""

from __future__ import annotations

from runtime.models.fanout import FanoutGroup
from runtime.models.flow import ConcurrencySlot, RateBucket, RateReservation, Schedule
from runtime.models.history import Event, Step
from runtime.models.messaging import Message, RunValue, Signal, SignalKeyset, SignalWait
from runtime.models.runs import Run
from runtime.models.search import SearchAttribute, SearchPending
from runtime.models.states import (
    ACTIVE_RUN_STATES,
    FINISHED_RUN_STATES,
    EventType,
    RunStatus,
    StepKind,
    StepStatus,
    choices,
    values,
)
from runtime.models.streams import StreamChunk
from runtime.models.updates import RunUpdate, UpdateStatus
from runtime.models.versions import ServedVersion

__all__ = [
    "ACTIVE_RUN_STATES",
    "FINISHED_RUN_STATES",
    "ConcurrencySlot",
    "Event",
    "EventType",
    "FanoutGroup",
    "Message",
    "RateBucket",
    "RateReservation",
    "Run",
    "RunStatus",
    "RunUpdate",
    "RunValue",
    "Schedule",
    "SearchAttribute",
    "SearchPending",
    "ServedVersion",
    "Signal",
    "SignalKeyset",
    "SignalWait",
    "Step",
    "StepKind",
    "StepStatus",
    "StreamChunk",
    "UpdateStatus",
    "choices",
    "values",
]
