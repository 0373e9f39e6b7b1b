"""A finished fan-out run written straight through the ORM, for the admin timeline's tests.

One inline step, then a fan-out of `branches` steps that ran `lanes` at a time (each branch
5 ms, the next wave starting as the last ends), one retried branch and optionally one child
branch with its child run.
"""

from __future__ import annotations

from datetime import timedelta

from runtime.core.identity import child_run_key, group_id, step_id
from runtime.models import Event, EventType, FanoutGroup, Run, RunStatus, Step, StepKind
from tests.support.run_rows import add_steps, make_run

BRANCH = timedelta(milliseconds=5)


def fanout_run(branches: int, lanes: int = 16, *, with_child: bool = False) -> Run:
    """A completed `examples.fanout_noop` run whose branches are at positions 1..branches."""
    waves = -(-branches // lanes)
    run = make_run("examples.fanout_noop", RunStatus.COMPLETED, input={"args": [branches]})
    first = add_steps(run, 1, name="examples.noop")[0]
    began = run.created_at + timedelta(milliseconds=30)
    steps = []
    for i in range(branches):
        position = i + 1
        start = began + BRANCH * (i // lanes)
        child = with_child and i == branches - 1
        steps.append(
            Step(
                id=step_id(run.id, position), run=run, position=position,
                name="examples.fanout_noop" if child else "examples.noop_branch",
                kind=StepKind.CHILD if child else StepKind.STEP, status="completed",
                attempt=2 if i == 0 else 1, created_at=began, started_at=start,
                finished_at=start + BRANCH, result=2 * i,
            )
        )  # fmt: skip
    Step.objects.bulk_create(steps, batch_size=5000)
    end = began + BRANCH * waves
    FanoutGroup.objects.create(
        id=group_id(run.id, 1), run=run, first_position=1, total=branches, released=branches,
        succeeded=branches, failure_limit=0, verdict="succeeded", created_at=began, settled_at=end,
    )  # fmt: skip
    Event.objects.create(
        run=run, seq=1, type=EventType.STEP_RETRYING, step=steps[0], payload={"attempt": 1},
        created_at=began + timedelta(milliseconds=1),
    )  # fmt: skip
    Run.objects.filter(pk=run.pk).update(
        last_seq=1, finished_at=end + timedelta(milliseconds=10), started_at=first.started_at
    )
    if with_child:
        make_run(
            "examples.fanout_noop", RunStatus.COMPLETED,
            idempotency_key=child_run_key(run.id, branches), input={"args": [0]},
        )  # fmt: skip
    return Run.objects.get(pk=run.pk)
