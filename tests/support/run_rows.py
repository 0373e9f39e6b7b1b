"""Run, Step and Event rows written straight through the ORM, for tests that read history.

Nothing here executes a workflow: the rows look like what the runtime records, with dense event
seqs, `last_seq` in step with them, and step ids derived the way the runtime derives them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from runtime.core.identity import step_id
from runtime.models import Event, EventType, Run, RunStatus, Step, StepKind, StepStatus

TICK = timedelta(milliseconds=12)


def make_run(
    workflow: str = "examples.sequential_sum",
    status: str = RunStatus.COMPLETED,
    *,
    created_at: datetime | None = None,
    **fields: Any,
) -> Run:
    """A run row; finished statuses get started/finished times unless given."""
    created = created_at or timezone.now() - timedelta(minutes=5)
    fields.setdefault("input", {"args": [3], "kwargs": {}})
    if status != RunStatus.PENDING:
        fields.setdefault("started_at", created + TICK)
    if status in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED):
        fields.setdefault("finished_at", created + timedelta(seconds=1.5))
    return Run.objects.create(
        workflow=workflow, status=status, created_at=created, updated_at=created, **fields
    )


def add_steps(
    run: Run,
    count: int,
    *,
    name: str = "examples.add",
    status: str = StepStatus.COMPLETED,
    kind: str = StepKind.STEP,
    first_position: int = 0,
    **fields: Any,
) -> list[Step]:
    """`count` consecutive steps, one TICK apart, bulk-inserted."""
    steps = []
    for i in range(count):
        position = first_position + i
        started = run.created_at + TICK * (position + 1)
        finished = started + TICK if status in (StepStatus.COMPLETED, StepStatus.FAILED) else None
        steps.append(
            Step(
                id=step_id(run.id, position),
                run=run,
                position=position,
                name=name,
                kind=kind,
                status=status,
                attempt=1,
                created_at=started,
                started_at=None if status == StepStatus.PENDING else started,
                finished_at=finished,
                **fields,
            )
        )
    return Step.objects.bulk_create(steps, batch_size=5000)


def add_events(
    run: Run, entries: list[tuple[str, Step | None]], *, spacing: timedelta = TICK
) -> None:
    """Append events of the given (type, step) after the run's existing ones, `spacing` apart."""
    first = run.last_seq + 1
    events = [
        Event(
            run=run,
            seq=first + i,
            type=event_type,
            step=step,
            payload={"position": step.position} if step is not None else {},
            created_at=run.created_at + spacing * (first + i - 1),
        )
        for i, (event_type, step) in enumerate(entries)
    ]
    Event.objects.bulk_create(events, batch_size=5000)
    run.last_seq = first + len(entries) - 1
    Run.objects.filter(pk=run.pk).update(last_seq=run.last_seq)


def finished_run(step_count: int = 3, **fields: Any) -> Run:
    """A completed run of `examples.sequential_sum` with its steps and full timeline."""
    fields.setdefault("input", {"args": [step_count], "kwargs": {}})
    fields.setdefault("result", step_count * (step_count + 1) // 2)
    run = make_run("examples.sequential_sum", RunStatus.COMPLETED, **fields)
    steps = add_steps(run, step_count)
    entries: list[tuple[str, Step | None]] = [
        (EventType.RUN_CREATED, None),
        (EventType.RUN_STARTED, None),
    ]
    for step in steps:
        entries += [(EventType.STEP_STARTED, step), (EventType.STEP_COMPLETED, step)]
    entries.append((EventType.RUN_COMPLETED, None))
    add_events(run, entries)
    return run


def waiting_run(**fields: Any) -> Run:
    """A run of `examples.nap` asleep in its durable sleep (a running sleep step)."""
    fields.setdefault("input", {"args": [], "kwargs": {"seconds": 3600}})
    wake = timezone.now() + timedelta(hours=1)
    run = make_run("examples.nap", RunStatus.WAITING, wake_at=wake, **fields)
    first = add_steps(run, 1, name="examples.stamp")
    sleep = add_steps(
        run,
        1,
        name="sleep",
        kind=StepKind.SLEEP,
        status=StepStatus.RUNNING,
        first_position=1,
        input={"seconds": 3600.0},
        wake_at=wake,
    )
    add_events(
        run,
        [
            (EventType.RUN_CREATED, None),
            (EventType.RUN_STARTED, None),
            (EventType.STEP_COMPLETED, first[0]),
            (EventType.WAIT_CREATED, sleep[0]),
        ],
    )
    return run
