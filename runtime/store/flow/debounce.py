"""Debounced starts: a start coalesced into its key's pending run under that row's lock, or a
new run (runtime.messaging.debounce checks the start and decides when it is due)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from django.db import IntegrityError, transaction

from runtime.core.clock import current_time
from runtime.models import Event, EventType, Run, RunStatus
from runtime.registry import versions
from runtime.store.history.payload_forms import StoredForms

_ATTEMPTS = 3  # a first start racing another first start retries (the loser finds the run)


@dataclass(frozen=True)
class DebounceWindow:
    """When a coalesced run is due (`due(first_start, now)`), and what its run_created event
    records of the debounce."""

    due: Callable[[datetime, datetime], datetime]
    recorded: dict[str, Any]


def coalesce_start(
    workflow: str,
    key: str,
    run_input: Any,
    terms: DebounceWindow,
    priority: int,
    owner_id: int | None,
    enqueue_at: Callable[[uuid.UUID, datetime, int], object],
) -> tuple[Run, bool]:
    """Fold this start into the owner's pending run of `key` (its input replaced, its due
    time moved), or create that run; `enqueue_at(run_id, due, priority)` after commit.
    (run, created)."""
    for attempt in range(_ATTEMPTS):
        try:
            with transaction.atomic():
                return _coalesce_txn(
                    workflow, key, run_input, terms, priority, owner_id, enqueue_at
                )
        except IntegrityError:
            if attempt == _ATTEMPTS - 1:
                raise
    raise RuntimeError("unreachable")  # pragma: no cover


def _coalesce_txn(
    workflow: str,
    key: str,
    run_input: Any,
    terms: DebounceWindow,
    priority: int,
    owner_id: int | None,
    enqueue_at: Callable[[uuid.UUID, datetime, int], object],
) -> tuple[Run, bool]:
    now = current_time()
    mine = Run.objects.filter(owner_id=owner_id, workflow=workflow, idempotency_key=key)
    run = mine.select_for_update().first()
    if run is not None and run.status == RunStatus.PENDING and run.lease_token is None:
        due = terms.due(run.created_at, now)
        stored = StoredForms().form(run_input, run.id)
        Run.objects.filter(id=run.id).update(input=stored, wake_at=due, updated_at=now)
        run.input, run.wake_at = run_input, due
        transaction.on_commit(partial(enqueue_at, run.id, due, priority))
        return run, False
    if run is not None:  # it began (or ended): later starts make the next batch
        Run.objects.filter(id=run.id).update(idempotency_key=f"{key}:{run.id}")
    due = terms.due(now, now)
    run = Run(workflow=workflow, input=run_input, idempotency_key=key, created_at=now,
              updated_at=now, wake_at=due, last_seq=1, priority=priority,
              owner_id=owner_id, app_version=versions.current())  # fmt: skip
    forms = StoredForms()
    run.input = forms.form(run_input, run.id)  # the stored form; the caller sees the value
    run.save(force_insert=True)
    run.input = run_input
    payload = {
        "workflow": workflow,
        "input": run_input,
        "idempotency_key": None,
        "debounce": terms.recorded,
    }
    if owner_id is not None:
        payload["owner"] = owner_id
    Event.objects.create(run=run, seq=1, type=EventType.RUN_CREATED,
                         payload=forms.form(payload, run.id), created_at=now)  # fmt: skip
    transaction.on_commit(partial(enqueue_at, run.id, due, priority))
    return run, True
