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
from typing import Any

from runtime import conf
from runtime.core.errors import NothingToRetry, PositionOutOfRange, PositionUnfinished
from runtime.core.jsonvalues import checked
from runtime.dispatch import enqueue_run
from runtime.models import Run, StepKind, StepStatus
from runtime.registry import registry
from runtime.services import Actor, get_run_row, with_actor
from runtime.store.runs.forks import (
    ForkPlan,
    first_unsuccessful_position,
    groups_before,
    insert_fork,
    last_position,
    steps_before,
)
from runtime.store.runs.search_rows import start_values


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
    started_with, attributes = _fork_search(plan)
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
            **({"search": started_with} if started_with else {}),
        },
        by,
    )
    return insert_fork(plan, run_input, payload, then=_enqueue, attributes=attributes)


def _fork_search(plan: ForkPlan) -> tuple[dict[str, Any], list[tuple[str, str, Any, int]]]:
    """The source's start attributes (the fork starts with them) and the fork's attributes:
    those, changed by the copied `ctx.set_search` records, as (name, kind, value, position);
    names the workflow no longer declares are left out."""
    declared = registry.workflow(plan.source.workflow).search
    started = {k: v for k, v in start_values(plan.source).items() if k in declared}
    values = {k: (v, 0) for k, v in started.items()}
    for copied in plan.steps:
        if copied.kind == StepKind.SEARCH and isinstance(copied.result, dict):
            values.update({k: (v, copied.position) for k, v in copied.result.items()})
    rows = [(k, declared[k], v, p) for k, (v, p) in values.items() if k in declared]
    return started, rows


def _enqueue(run: Run) -> None:
    enqueue_run(run.id, priority=run.priority)


def retry_run(run_id: uuid.UUID | str, *, by: Actor | None = None) -> Run:
    """Fork `run_id` from its first failed or cancelled step; NothingToRetry if it has none."""
    source = get_run_row(run_id)
    first = first_failed_position(source)
    if first is None:
        raise NothingToRetry(f"run {source.id} has no failed or cancelled step to retry from")
    return fork_run(source.id, first, reason="retry", by=by)


def first_failed_position(run: Run) -> int | None:
    """The position of `run`'s first failed or cancelled step (where a retry forks), or None."""
    return first_unsuccessful_position(run)


def plan_fork(source: Run, from_position: object) -> ForkPlan:
    """Check `from_position` against the source's history and decide what the fork copies."""
    last = last_position(source)
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
    groups = groups_before(source, position)
    for group in groups:
        if group.first_position < position < group.first_position + group.total:
            position = group.first_position  # inside a fan-out: the whole fan-out runs again
    steps = steps_before(source, position)
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
