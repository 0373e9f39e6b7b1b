"""Debounced starts: starts with one debounce key coalesce into one pending run.

The run begins `debounce` after the last of them (at the latest `debounce_max_wait` after the
first) with the last start's arguments. The pending run holds the key
`debounce_run_key(workflow, key)`, in a namespace no caller's idempotency key can reach; a
start that finds it claimed already (it began) renames its key and opens the next batch. The
run's claim (runtime.store.runs.claim_run) refuses it before it is due, and a start that moves
it holds its row lock, so a worker never begins it with older arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from runtime import conf
from runtime.core.callbacks import as_seconds
from runtime.core.errors import InvalidArguments
from runtime.core.identity import debounce_run_key
from runtime.core.jsonvalues import checked
from runtime.dispatch import enqueue_run
from runtime.models import Event, EventType, Run, RunStatus
from runtime.registry import WorkflowFunction, registry
from runtime.store.payload_forms import StoredForms

_ATTEMPTS = 3  # a first start racing another first start retries (the loser finds the run)


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
    workflow: str | WorkflowFunction[Any],
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
    for attempt in range(_ATTEMPTS):
        try:
            with transaction.atomic():
                return _coalesce(wf.name, key, run_input, terms, priority, owner_id)
        except IntegrityError:
            if attempt == _ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def _coalesce(
    workflow: str,
    key: str,
    run_input: Any,
    terms: DebounceTerms,
    priority: int,
    owner_id: int | None,
) -> tuple[Run, bool]:
    now = timezone.now()
    mine = Run.objects.filter(owner_id=owner_id, workflow=workflow, idempotency_key=key)
    run = mine.select_for_update().first()
    if run is not None and run.status == RunStatus.PENDING and run.lease_token is None:
        due = terms.due(run.created_at, now)
        stored = StoredForms().form(run_input, run.id)
        Run.objects.filter(id=run.id).update(input=stored, wake_at=due, updated_at=now)
        run.input, run.wake_at = run_input, due
        transaction.on_commit(partial(_enqueue_at, run.id, due, priority))
        return run, False
    if run is not None:  # it began (or ended): later starts make the next batch
        Run.objects.filter(id=run.id).update(idempotency_key=f"{key}:{run.id}")
    due = terms.due(now, now)
    run = Run(workflow=workflow, input=run_input, idempotency_key=key, created_at=now,
              updated_at=now, wake_at=due, last_seq=1, priority=priority,
              owner_id=owner_id)  # fmt: skip
    forms = StoredForms()
    run.input = forms.form(run_input, run.id)  # the stored form; the caller sees the value
    run.save(force_insert=True)
    run.input = run_input
    payload = {
        "workflow": workflow,
        "input": run_input,
        "idempotency_key": None,
        "debounce": {"key": terms.key, "seconds": terms.delay.total_seconds()},
    }
    if owner_id is not None:
        payload["owner"] = owner_id
    Event.objects.create(run=run, seq=1, type=EventType.RUN_CREATED,
                         payload=forms.form(payload, run.id), created_at=now)  # fmt: skip
    transaction.on_commit(partial(_enqueue_at, run.id, due, priority))
    return run, True


def _enqueue_at(run_id: Any, due: datetime, priority: int) -> None:
    # Every start enqueues its own wake-up; those that come early find the run not yet due.
    countdown = max((due - timezone.now()).total_seconds(), 0.0)
    enqueue_run(run_id, countdown=countdown, priority=priority)
