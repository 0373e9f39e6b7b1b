"""What a blocked run waits for, read from its open steps (`RunHandle.waiting_on()`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from runtime.core.states import StepKind

APPROVAL_TOPIC_PREFIX = "fanfold.approvals."  # runtime.store.messaging.approvals.answer_topic


@dataclass(frozen=True)
class Waiting:
    """`kind`: sleep, callback, message, signal, update, approval, condition or children;
    `name`: the callback's name, the topic, the signal's name or the update names (comma
    separated; None for any update) (a step's retry, a sleep: the step's name; else None);
    `until`: when its timer falls (None: no timer)."""

    kind: str
    name: str | None = None
    until: datetime | None = None


@dataclass(frozen=True)
class OpenStep:
    """A step of the run not finished yet, as `waiting_for` reads it."""

    position: int
    kind: str
    name: str
    wake_at: datetime | None
    step_input: Any = None
    branch: bool = False  # a fan-out branch or a child run's step (runs apart from the run)


def waiting_for(open_steps: Sequence[OpenStep], run_wake: datetime | None) -> Waiting:
    """The wait of a suspended run whose open steps are `open_steps`: the latest one the
    workflow itself is at (its fan-outs' branches count as children)."""
    if any(step.branch or step.kind == StepKind.CHILD for step in open_steps):
        return Waiting("children", None, run_wake)
    own = [step for step in open_steps if not step.branch]
    if not own:
        return Waiting("sleep", None, run_wake)
    step = max(own, key=lambda s: s.position)
    until = step.wake_at
    if step.kind == StepKind.SLEEP:
        return Waiting("sleep", None, until)
    if step.kind == StepKind.CALLBACK:
        return Waiting("callback", step.name, until)
    if step.kind == StepKind.SIGNAL:
        return Waiting("signal", step.name, until)
    if step.kind == StepKind.MESSAGE:
        if step.name.startswith(APPROVAL_TOPIC_PREFIX):
            return Waiting("approval", None, until)
        return Waiting("message", step.name, until)
    if step.kind == StepKind.UPDATE:  # ctx.next_update: its names, in the order it gave them
        names = step.step_input.get("names") if isinstance(step.step_input, dict) else None
        return Waiting("update", ", ".join(names) if names else None, until)
    if isinstance(step.step_input, dict) and "poll" in step.step_input:
        return Waiting("condition", step.name, until)
    return Waiting("sleep", step.name, until)  # a step waiting for its next attempt
