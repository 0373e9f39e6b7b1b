"""The states and kinds a run's records take: statuses of runs and steps, step kinds, and the
event log's types. The one definition: runtime.models makes its field choices from these."""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    WAITING = "waiting"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINISHED_RUN_STATES = (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)
ACTIVE_RUN_STATES = (RunStatus.PENDING, RunStatus.RUNNING, RunStatus.WAITING)


class StepStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class StepKind(StrEnum):
    STEP = "step"
    SLEEP = "sleep"
    CALLBACK = "callback"
    CHILD = "child"
    MARKER = "marker"  # a `ctx.patched` answer: recorded, never run
    MESSAGE = "message"  # `ctx.recv`
    SIGNAL = "signal"  # `ctx.wait_for_signal`
    VALUE = "value"  # `ctx.set_value`
    SEND = "send"  # `send` from workflow code
    UPDATE = "update"  # `ctx.next_update`
    REPLY = "reply"  # an update's `reply` or `reject`
    SEARCH = "search"  # `ctx.set_search`


class EventType(StrEnum):
    RUN_CREATED = "run_created"
    RUN_STARTED = "run_started"
    STEP_CREATED = "step_created"
    STEP_STARTED = "step_started"
    STEP_RETRYING = "step_retrying"
    STEP_COMPLETED = "step_completed"
    STEP_FAILED = "step_failed"
    WAIT_CREATED = "wait_created"
    WAIT_COMPLETED = "wait_completed"
    CALLBACK_CREATED = "callback_created"
    CALLBACK_RECEIVED = "callback_received"
    CALLBACK_TIMED_OUT = "callback_timed_out"
    MARKER_RECORDED = "marker_recorded"
    MESSAGE_RECEIVED = "message_received"
    VALUE_SET = "value_set"
    SIGNAL_RECEIVED = "signal_received"
    APPROVAL_REQUESTED = "approval_requested"  # runtime.agents: a tool call waits for a person
    APPROVAL_DECIDED = "approval_decided"
    UPDATE_RECEIVED = "update_received"  # `ctx.next_update` took an accepted update
    UPDATE_REPLIED = "update_replied"  # its reply or rejection
    SEARCH_SET = "search_set"  # `ctx.set_search`: a run's search attributes changed
    RUN_COMPLETED = "run_completed"
    RUN_FAILED = "run_failed"
    RUN_CANCELLED = "run_cancelled"
    VERSION_UPGRADED = "version_upgraded"  # `fanfold versions upgrade` moved the run
