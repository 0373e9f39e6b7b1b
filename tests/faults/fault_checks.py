"""What every fault test checks of a run, and how it waits."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from runtime.models import Event, Run, Step
from tests.support.waiting import wait_until

# The event that completes each kind of step: a step's, a durable sleep's, a received
# message's, a set value's.
COMPLETIONS = ("step_completed", "wait_completed", "message_received", "value_set")


def assert_each_step_completed_once(run_id: Any) -> None:
    """Every step of the run has exactly one completion in its event log, the run completed,
    and its events are dense."""
    run = Run.objects.get(id=run_id)
    assert run.status == "completed", run.error
    completions = Counter(
        Event.objects.filter(run_id=run_id, type__in=COMPLETIONS).values_list("step_id", flat=True)
    )
    steps = {sid: (pos, kind) for sid, pos, kind in
             Step.objects.filter(run_id=run_id).values_list("id", "position", "kind")}  # fmt: skip
    missing = {
        steps[sid]: list(Event.objects.filter(step_id=sid).values_list("type", flat=True))
        for sid in set(steps) - set(completions)
    }
    assert missing == {}, f"steps without a completion: {missing}"
    assert set(completions) == set(steps)
    assert set(completions.values()) == {1}
    seqs = list(Event.objects.filter(run_id=run_id).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> float:
    """`wait_until` that returns the seconds it took (a recovery's time)."""
    began = time.monotonic()
    wait_until(predicate, timeout, interval=0.05, message=what)
    return time.monotonic() - began
