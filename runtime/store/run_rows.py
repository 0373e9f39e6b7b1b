"""Run rows as the services read and write them: a new run with its run_created event, runs
found by key or by concurrency slot, and the step a callback token names."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import transaction

from runtime.models import ACTIVE_RUN_STATES, Event, EventType, Run, Step
from runtime.store.payload_forms import StoredForms


def insert_run(
    run: Run,
    payload: dict[str, Any],
    now: datetime,
    *,
    bound: int | None,
    then: Callable[[], object],
) -> Run:
    """Insert `run` and its run_created event (with `payload`) in one transaction, both in
    their stored forms (runtime.store.payload_forms), `bound` their JSON size's bound;
    `then()` runs once that commits."""
    run_input = run.input
    forms = StoredForms()
    with transaction.atomic():
        run.input = forms.form(run_input, run.id, bound)
        run.save(force_insert=True)
        run.input = run_input
        Event.objects.create(
            run=run,
            seq=1,
            type=EventType.RUN_CREATED,
            payload=forms.form(payload, run.id, bound),
            created_at=now,
        )
        transaction.on_commit(then)
    return run


def run_by_id(run_id: uuid.UUID) -> Run | None:
    """The run's row, or None."""
    return Run.objects.filter(id=run_id).first()


def keyed_run(owner_id: int | None, workflow: str, key: str) -> Run | None:
    """The run this owner started of this workflow with this idempotency key, or None."""
    return Run.objects.filter(owner_id=owner_id, workflow=workflow, idempotency_key=key).first()


def slots_taken(workflow: str, concurrency_key: str) -> int:
    """How many active runs of the workflow hold a slot of this concurrency key."""
    in_use = Run.objects.active().filter(
        workflow=workflow, concurrency_key=concurrency_key, admitted=True
    )
    return in_use.count()


def active_runs_of_key(
    workflow: str, concurrency_key: str, owner_id: int | None
) -> list[uuid.UUID]:
    """The ids of the owner's active runs of this workflow and concurrency key, oldest first."""
    active = Run.objects.active().filter(
        workflow=workflow, concurrency_key=concurrency_key, owner_id=owner_id
    )
    return list(active.order_by("created_at").values_list("id", flat=True))


def is_admitted(run_id: uuid.UUID) -> bool:
    """Whether the run has been admitted into a concurrency slot."""
    return Run.objects.filter(id=run_id, admitted=True).exists()


def active_runs_keyed_under(owner_id: int | None, key_prefix: str) -> list[uuid.UUID]:
    """The ids of the owner's active runs whose idempotency key starts with `key_prefix`."""
    children = Run.objects.active().filter(
        owner_id=owner_id, idempotency_key__startswith=key_prefix
    )
    return list(children.values_list("id", flat=True))


def callback_step(token_digest: str) -> Step | None:
    """The callback step whose token has this digest, with its run, or None."""
    return Step.objects.select_related("run").filter(callback_token=token_digest).first()


def finished_among(run_ids: list[uuid.UUID]) -> list[uuid.UUID]:
    """Those of these runs that still exist and are no longer active."""
    rows = Run.objects.filter(id__in=run_ids).exclude(status__in=ACTIVE_RUN_STATES)
    return list(rows.values_list("id", flat=True))
