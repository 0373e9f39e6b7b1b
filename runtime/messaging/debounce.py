"""Debounced starts: starts with one debounce key coalesce into one pending run.

The run begins `debounce` after the last of them (at the latest `debounce_max_wait` after the
first) with the last start's arguments. The pending run holds the key
`debounce_run_key(workflow, key)`, in a namespace no caller's idempotency key can reach; a
start that finds it claimed already (it began) renames its key and opens the next batch. The
run's claim (runtime.store.runs.run_statements.claim_run) refuses it before it is due, and a start
that moves it holds its row lock, so a worker never begins it with older arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from runtime import conf
from runtime.core.callbacks import as_seconds
from runtime.core.clock import current_time
from runtime.core.errors import InvalidArguments
from runtime.core.identity import debounce_run_key
from runtime.core.jsonvalues import checked
from runtime.dispatch import enqueue_run
from runtime.models import Run
from runtime.registry import WorkflowFunction, registry
from runtime.store.flow.debounce import DebounceWindow, coalesce_start


@dataclass(frozen=True)
class DebounceTerms:
    """A debounced start's terms, checked: the delay, the key, the longest wait."""

    delay: timedelta
    key: str
    max_wait: timedelta | None

    @classmethod
    def of(cls, debounce: object, key: object, max_wait: object) -> DebounceTerms:
        try:
            delay = as_seconds(debounce, "debounce")  # type: ignore[arg-type]
            longest = as_seconds(max_wait, "debounce_max_wait")  # type: ignore[arg-type]
        except ValueError as exc:
            raise InvalidArguments(str(exc)) from None
        if not delay:
            raise InvalidArguments("debounce must be a positive duration")
        if not isinstance(key, str) or not key or len(key) > 255 or "\x00" in key:
            raise InvalidArguments("debounce_key must be a string of 1 to 255 characters")
        wait = None if longest is None else timedelta(seconds=longest)
        return cls(timedelta(seconds=delay), key, wait)

    def due(self, first: datetime, now: datetime) -> datetime:
        """When a batch whose first start came at `first` begins, after a start at `now`."""
        due = now + self.delay
        return due if self.max_wait is None else min(due, first + self.max_wait)


def start_debounced(
    workflow: str | WorkflowFunction[..., Any],
    args: list[Any] | tuple[Any, ...],
    kwargs: dict[str, Any],
    terms: DebounceTerms,
    priority: int = 0,
    owner_id: int | None = None,
) -> tuple[Run, bool]:
    """Coalesce this start into its key's pending run (created if none); (run, created).
    Debounce keys are the owner's: another user's starts never join this owner's run."""
    wf = registry.workflow(workflow)
    if wf.flow.concurrency is not None:
        raise InvalidArguments("debounce does not combine with a workflow's concurrency limit")
    if isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority <= 9:
        raise InvalidArguments(f"priority must be an integer from 0 to 9, not {priority!r}")
    run_input, _ = checked(
        {"args": list(args), "kwargs": kwargs},
        f"workflow {wf.name!r} input",
        conf.get().MAX_PAYLOAD_BYTES,
    )
    wf.check_arguments(run_input["args"], run_input["kwargs"])
    key = debounce_run_key(wf.name, terms.key)
    window = DebounceWindow(terms.due, {"key": terms.key, "seconds": terms.delay.total_seconds()})
    return coalesce_start(wf.name, key, run_input, window, priority, owner_id, _enqueue_at)


def _enqueue_at(run_id: Any, due: datetime, priority: int) -> None:
    # Every start enqueues its own wake-up; those that come early find the run not yet due.
    countdown = max((due - current_time()).total_seconds(), 0.0)
    enqueue_run(run_id, countdown=countdown, priority=priority)
