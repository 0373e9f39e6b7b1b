"""The states and kinds of runtime.core.states (their one definition), as the models use them,
and the `choices=` Django fields and forms take from them."""

from __future__ import annotations

from enum import StrEnum

from runtime.core.states import (
    ACTIVE_RUN_STATES,
    FINISHED_RUN_STATES,
    EventType,
    RunStatus,
    StepKind,
    StepStatus,
)

__all__ = [
    "ACTIVE_RUN_STATES",
    "EVENT_TYPE_CHOICES",
    "FINISHED_RUN_STATES",
    "RUN_STATUS_CHOICES",
    "SHOWN_STEP_STATUSES",
    "STEP_KIND_CHOICES",
    "STEP_STATUS_CHOICES",
    "STEP_WAITING",
    "WAIT_STEP_KINDS",
    "EventType",
    "RunStatus",
    "StepKind",
    "StepStatus",
    "choices",
    "shown_step_status",
    "values",
]


def choices(states: type[StrEnum]) -> list[tuple[str, str]]:
    """(value, label) of each member, labelled as Django's TextChoices label them."""
    return [(member.value, member.name.replace("_", " ").title()) for member in states]


def values(states: type[StrEnum]) -> list[str]:
    """The members' values, in definition order."""
    return [member.value for member in states]


# The choice lists the models' fields use, importable by path (drf-spectacular's
# ENUM_NAME_OVERRIDES names them so each enum of the API schema gets one stable name).
RUN_STATUS_CHOICES = choices(RunStatus)
STEP_STATUS_CHOICES = choices(StepStatus)
STEP_KIND_CHOICES = choices(StepKind)
EVENT_TYPE_CHOICES = choices(EventType)


# Steps that wait for the outside world (a timer, a callback, a message, a signal): while such a
# step is open its run waits, holding no worker, so people are shown it as waiting.
WAIT_STEP_KINDS = frozenset(
    {StepKind.SLEEP, StepKind.CALLBACK, StepKind.MESSAGE, StepKind.SIGNAL, StepKind.UPDATE}
)
STEP_WAITING = "waiting"
SHOWN_STEP_STATUSES = [*STEP_STATUS_CHOICES, (STEP_WAITING, "Waiting")]


def shown_step_status(status: str, kind: str) -> str:
    """A step's status as the admin and the API show it: an open wait is `waiting` (it is
    stored as `running`, the state every unfinished step that has begun is in)."""
    return STEP_WAITING if status == StepStatus.RUNNING and kind in WAIT_STEP_KINDS else status
