"""`bench replay`: the replay check over many recorded histories, in runs per second.

One real run of `examples.noop_loop` is executed in this process; its step rows are then
copied into `runs` recorded runs (the replay check reads steps only, so no events are copied).
The check replays them all, as `manage.py fanfold replay` does, and the copies are deleted.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from django.utils import timezone

from bench import environment
from runtime.core.identity import step_id
from runtime.models import Run, RunStatus, Step
from runtime.replay_check import replay_runs
from runtime.services import start_run
from runtime.testing import InMemoryDispatcher, use_dispatcher

SEED_CHUNK = 1000  # runs inserted per bulk insert


def drop_seeded(ids: list[uuid.UUID], template: Run) -> None:
    """Delete the seeded runs (a chunk at a time) and the run they were copied from."""
    for start in range(0, len(ids), SEED_CHUNK):
        Run.objects.filter(id__in=ids[start : start + SEED_CHUNK]).delete()
    template.delete()


def recorded_run(steps: int, timeout: float) -> Run:
    """One run of `steps` no-op steps, executed in this process."""
    dispatcher = InMemoryDispatcher()
    with use_dispatcher(dispatcher):
        run, _ = start_run("examples.noop_loop", [steps])
        dispatcher.join(timeout=timeout)
    return Run.objects.get(id=run.id)


def seed_runs(
    template: Run,
    runs: int,
    status: RunStatus = RunStatus.COMPLETED,
    app_version: str = "",
) -> list[uuid.UUID]:
    """`runs` copies of `template`'s history, of this status (finished if completed) and
    version."""
    steps = list(Step.objects.filter(run=template).order_by("position"))
    now = timezone.now()
    ids: list[uuid.UUID] = []
    for start in range(0, runs, SEED_CHUNK):
        batch = [
            Run(
                id=uuid.uuid4(),
                workflow=template.workflow,
                input=template.input,
                status=status,
                result=template.result if status == RunStatus.COMPLETED else None,
                app_version=app_version,
                created_at=now,
                updated_at=now,
                finished_at=now if status == RunStatus.COMPLETED else None,
            )
            for _ in range(min(SEED_CHUNK, runs - start))
        ]
        Run.objects.bulk_create(batch)
        Step.objects.bulk_create(
            [
                Step(
                    id=step_id(run.id, s.position),
                    run_id=run.id,
                    position=s.position,
                    name=s.name,
                    kind=s.kind,
                    status=s.status,
                    attempt=s.attempt,
                    input=s.input,
                    result=s.result,
                    created_at=s.created_at,
                    started_at=s.started_at,
                    finished_at=s.finished_at,
                )
                for run in batch
                for s in steps
            ],
            batch_size=5000,
        )
        ids.extend(run.id for run in batch)
    return ids


def run_replay_check(runs: int, steps: int, timeout: float) -> dict[str, Any]:
    """Seed `runs` recorded runs of `steps` steps, replay-check them all, report the rate."""
    template = recorded_run(steps, timeout)
    seed_started = time.perf_counter()
    ids = seed_runs(template, runs)
    seeded = time.perf_counter() - seed_started
    try:
        started = time.perf_counter()
        checked = mismatched = 0
        queryset = Run.objects.filter(id__in=ids).only("id", "workflow", "status", "input")
        for report in replay_runs(queryset.iterator(chunk_size=500)):
            checked += 1
            mismatched += not report.ok
        seconds = time.perf_counter() - started
    finally:
        drop_seeded(ids, template)
    return {
        "scenario": "replay",
        **environment.describe(),
        "runs": checked,
        "steps_per_run": steps,
        "mismatched": mismatched,
        "seed_seconds": round(seeded, 3),
        "seconds": round(seconds, 3),
        "runs_per_second": round(checked / seconds, 1),
        "steps_per_second": round(checked * steps / seconds, 1),
    }
