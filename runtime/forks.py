"""Fork and retry: a new run whose history starts with a source run's records before a position.

The records before the position (step rows and their events) are copied, not run again: the
new run replays them like any recorded history and runs the rest. The source is never
changed; the link goes both ways through `Run.forked_from` / `Run.forks`, and the fork's
`run_created` event names the source and the position.

Rules (docs/operating.md says why):
- Positions go from 1 (copy nothing) to one past the last recorded position (copy all).
- A fan-out is copied whole or not at all: a position inside a fan-out's branches forks from
  its first branch, so the whole fan-out (with any child runs) runs again. A decided fan-out
  before the position is copied with its group row, child branches with their recorded
  outcome (the child runs themselves stay the source's).
- Only finished records are copied, so a running source may be forked up to its first step
  that has not finished; past it the fork is refused (PositionUnfinished).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from runtime import conf
from runtime.core.callbacks import derive_token, token_digest
from runtime.core.errors import NothingToRetry, PositionOutOfRange, PositionUnfinished
from runtime.core.identity import step_id
from runtime.core.jsonvalues import checked
from runtime.dispatch import enqueue_run
from runtime.models import Event, EventType, FanoutGroup, Run, Step, StepStatus
from runtime.registry import registry
from runtime.services import Actor, get_run_row, with_actor
from runtime.store.payload_forms import StoredForms


@dataclass(frozen=True)
class ForkPlan:
    """What a fork of `source` copies: the records before `position` and decided fan-outs."""

    source: Run
    requested: int
    position: int
    steps: list[Step]
    groups: list[FanoutGroup]


def fork_run(
    run_id: uuid.UUID | str,
    from_position: int,
    args: list[Any] | None = None,
    kwargs: dict[str, Any] | None = None,
    *,
    reason: str = "fork",
    by: Actor | None = None,
) -> Run:
    """Create (and enqueue after commit) a fork of `run_id` from `from_position`.

    The fork has the source's owner; `by` (runtime.access.actors.actor_of) names who forked
    it, in its run_created event.
    `args` / `kwargs` replace the source's arguments when given. Raises RunNotFound,
    PositionOutOfRange, PositionUnfinished, WorkflowNotFound, InvalidArguments or a
    PayloadError; nothing is written then.
    """
    source = get_run_row(run_id)
    run_input = _fork_input(source, args, kwargs)
    plan = plan_fork(source, from_position)
    return _create(plan, run_input, reason, by)


def retry_run(run_id: uuid.UUID | str, *, by: Actor | None = None) -> Run:
    """Fork `run_id` from its first failed or cancelled step; NothingToRetry if it has none."""
    source = get_run_row(run_id)
    first = first_failed_position(source)
    if first is None:
        raise NothingToRetry(f"run {source.id} has no failed or cancelled step to retry from")
    return fork_run(source.id, first, reason="retry", by=by)


def first_failed_position(run: Run) -> int | None:
    """The position of `run`'s first failed or cancelled step (where a retry forks), or None."""
    return (
        Step.objects.filter(run=run, status__in=[StepStatus.FAILED, StepStatus.CANCELLED])
        .order_by("position")
        .values_list("position", flat=True)
        .first()
    )


def plan_fork(source: Run, from_position: object) -> ForkPlan:
    """Check `from_position` against the source's history and decide what the fork copies."""
    last = Step.objects.filter(run=source).aggregate(last=Max("position"))["last"] or 0
    if (
        not isinstance(from_position, int)
        or isinstance(from_position, bool)
        or not 1 <= from_position <= last + 1
    ):
        raise PositionOutOfRange(
            f"run {source.id} records positions 1 to {last}: fork from a position "
            f"between 1 and {last + 1}, not {from_position!r}"
        )
    position = from_position
    groups = list(FanoutGroup.objects.filter(run=source, first_position__lt=position))
    for group in groups:
        if group.first_position < position < group.first_position + group.total:
            position = group.first_position  # inside a fan-out: the whole fan-out runs again
    steps = list(Step.objects.filter(run=source, position__lt=position).order_by("position"))
    for copied in steps:
        if copied.status in (StepStatus.PENDING, StepStatus.RUNNING):
            raise PositionUnfinished(
                f"{copied.kind} {copied.name!r} at position {copied.position} of run "
                f"{source.id} has not finished: fork from position {copied.position} or earlier"
            )
    whole = [g for g in groups if g.first_position + g.total <= position]
    return ForkPlan(source, from_position, position, steps, whole)


def _fork_input(
    source: Run, args: list[Any] | None, kwargs: dict[str, Any] | None
) -> dict[str, Any]:
    wf = registry.workflow(source.workflow)
    run_input, _ = checked(
        {
            "args": source.args if args is None else list(args),
            "kwargs": source.kwargs if kwargs is None else dict(kwargs),
        },
        f"workflow {wf.name!r} input",
        conf.get().MAX_PAYLOAD_BYTES,
    )
    wf.check_arguments(run_input["args"], run_input["kwargs"])
    return dict(run_input)


def _create(plan: ForkPlan, run_input: dict[str, Any], reason: str, by: Actor | None) -> Run:
    """Insert the fork with its copied records in one transaction; enqueue it after commit."""
    now = timezone.now()
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
        )
        forms = StoredForms()
        run.input = forms.form(run_input, run.id)
        run.save(force_insert=True)
        run.input = run_input
        payload = with_actor(
            {
                "workflow": source.workflow,
                "input": run_input,
                "idempotency_key": None,
                "forked_from": str(source.id),
                "position": plan.position,
                "requested_position": plan.requested,
                "reason": reason,
                **({"owner": source.owner_id} if source.owner_id is not None else {}),
            },
            by,
        )
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
        transaction.on_commit(lambda: enqueue_run(run.id, priority=run.priority))
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
    token = (
        token_digest(derive_token(conf.token_secrets()[0], sid)) if step.callback_token else None
    )
    row = replace(step.as_row(), id=sid, wake_at=None, callback_token=token)
    return Step.from_row(run_id, forms.step_row(row, run_id, None))
