"""A fork's records: what it copies from its source, and its insertion in one transaction
(runtime.forks decides the position and the input)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import Max

from runtime import conf
from runtime.core.callbacks import derive_token, token_digest
from runtime.core.clock import current_time
from runtime.core.identity import step_id
from runtime.models import Event, EventType, FanoutGroup, Run, Step, StepStatus
from runtime.registry import versions
from runtime.store.history.payload_forms import StoredForms
from runtime.store.runs.search_rows import attribute_rows, insert_rows


@dataclass(frozen=True)
class ForkPlan:
    """What a fork of `source` copies: the records before `position` and decided fan-outs."""

    source: Run
    requested: int
    position: int
    steps: list[Step]
    groups: list[FanoutGroup]


def last_position(run: Run) -> int:
    """The run's last recorded position (0 for none)."""
    last: int | None = Step.objects.filter(run=run).aggregate(last=Max("position"))["last"]
    return last or 0


def first_unsuccessful_position(run: Run) -> int | None:
    """The position of the run's first failed or cancelled step, or None."""
    return (
        Step.objects.filter(run=run, status__in=[StepStatus.FAILED, StepStatus.CANCELLED])
        .order_by("position")
        .values_list("position", flat=True)
        .first()
    )


def groups_before(run: Run, position: int) -> list[FanoutGroup]:
    """The run's fan-out groups that begin before `position`."""
    return list(FanoutGroup.objects.filter(run=run, first_position__lt=position))


def steps_before(run: Run, position: int) -> list[Step]:
    """The run's step records before `position`, in order."""
    return list(Step.objects.filter(run=run, position__lt=position).order_by("position"))


def insert_fork(
    plan: ForkPlan,
    run_input: dict[str, Any],
    payload: dict[str, Any],
    *,
    then: Callable[[Run], object],
    attributes: Sequence[tuple[str, str, Any, int]] = (),
) -> Run:
    """Insert the fork of `plan` with its copied records in one transaction, its run_created
    event carrying `payload`, its search `attributes` (name, kind, value, position); `then(run)`
    runs once that commits."""
    now = current_time()
    source = plan.source
    with transaction.atomic():
        events = list(
            Event.objects.filter(run=source, step_id__in=[s.id for s in plan.steps]).order_by("seq")
        )
        run = Run(
            workflow=source.workflow,
            input=run_input,
            created_at=now,
            updated_at=now,
            wake_at=now,
            last_seq=1 + len(events),
            forked_from=source,
            forked_from_position=plan.position,
            priority=source.priority,  # a fork goes on with its source's work
            owner_id=source.owner_id,  # and belongs to the source's owner
            app_version=versions.current(),  # but runs on this deployment's code
        )
        forms = StoredForms()
        run.input = forms.form(run_input, run.id)
        run.save(force_insert=True)
        run.input = run_input
        Event.objects.create(
            run=run,
            seq=1,
            type=EventType.RUN_CREATED,
            payload=forms.form(payload, run.id),
            created_at=now,
        )
        Step.objects.bulk_create([_copied_step(s, run.id, forms) for s in plan.steps])
        Event.objects.bulk_create(_copied_events(plan, events, run.id, forms))
        FanoutGroup.objects.bulk_create([g.copied_to(run.id) for g in plan.groups])
        for name, kind, value, position in attributes:
            insert_rows(attribute_rows(run.id, {name: kind}, {name: value}, position))
        transaction.on_commit(partial(then, run))
    return run


def _copied_events(
    plan: ForkPlan, events: list[Event], run_id: uuid.UUID, forms: StoredForms
) -> list[Event]:
    """The source's step events, renumbered after the fork's run_created, on the copied steps
    (payloads packed again for the fork: an offloaded file belongs to its run)."""
    ids = {s.id: step_id(run_id, s.position) for s in plan.steps}
    return [
        Event(
            run_id=run_id,
            seq=seq,
            type=event.type,
            step_id=ids.get(event.step_id) if event.step_id else None,
            payload=forms.form(event.payload, run_id),
            created_at=event.created_at,
        )
        for seq, event in enumerate(events, start=2)
    ]


def _copied_step(step: Step, run_id: uuid.UUID, forms: StoredForms) -> Step:
    sid = step_id(run_id, step.position)
    # The copy is a new callback: a token (and digest) of its own, never the source's.
    secret = conf.token_secrets()[0]
    token = token_digest(derive_token(secret, run_id, sid)) if step.callback_token else None
    row = replace(step.as_row(), id=sid, wake_at=None, callback_token=token)
    return Step.from_row(run_id, forms.step_row(row, run_id, None))
