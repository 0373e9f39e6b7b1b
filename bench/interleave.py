"""`bench seq --observe`: one worker with metrics and tracing off and one with both on, alive
side by side, taking runs from the same queue in turn.

Restarting workers between an "off" run and an "on" run leaves seconds between them, and on a
shared machine the load changes by more than the overhead in that time. Here both workers wait
on the queue together, each run goes to whichever is free (Redis and RabbitMQ hand a message
to the consumer that has waited longest, so they mostly alternate), and each run is put on the
side whose worker used the CPU while it ran.
"""

from __future__ import annotations

import tempfile
from typing import Any

from bench import environment
from bench.stats import median
from bench.workers import WorkerProcess
from runtime.handles import start
from runtime.models import Run

WARM_UP_STEPS = 10


def _cpu(workers: dict[str, WorkerProcess]) -> dict[str, float]:
    used = {side: worker.cpu_seconds() for side, worker in workers.items()}
    if any(value is None for value in used.values()):
        raise RuntimeError("bench seq --observe needs /proc to tell the workers apart")
    return {side: float(value or 0.0) for side, value in used.items()}


def _one_run(workers: dict[str, WorkerProcess], steps: int, timeout: float) -> dict[str, Any]:
    """One run of `steps`: which side ran it, its steps per second and CPU per step."""
    before = _cpu(workers)
    handle = start("examples.noop_loop", steps)
    handle.wait(timeout=timeout)
    after = _cpu(workers)
    used = {side: after[side] - before[side] for side in workers}
    side = max(used, key=lambda s: used[s])
    run = Run.objects.get(id=handle.id)
    if run.finished_at is None:
        raise RuntimeError(f"run {run.id} did not finish")
    seconds = (run.finished_at - run.created_at).total_seconds()
    return {
        "side": side,
        "steps_per_second": round(steps / seconds, 1),
        "worker_cpu_us_per_step": round(used[side] / steps * 1e6, 1),
    }


def _collect(
    workers: dict[str, WorkerProcess], steps: int, timeout: float, per_side: int
) -> dict[str, list[dict[str, Any]]]:
    """Runs until each side has `per_side` of them (at most four times that many in all)."""
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in workers}
    warmed: set[str] = set()
    for _ in range(20):  # both sides first pay for their connections and prepares
        warmed.add(_one_run(workers, WARM_UP_STEPS, timeout)["side"])
        if warmed == set(workers):
            break
    for _ in range(4 * per_side * len(workers)):
        if all(len(done) >= per_side for done in runs.values()):
            break
        result = _one_run(workers, steps, timeout)
        if len(runs[result["side"]]) < per_side:
            runs[result["side"]].append(result)
    if not all(runs.values()):
        raise RuntimeError("one worker took no measured run; see the worker logs in var/")
    return runs


def interleaved_sequential(
    steps: int, timeout: float, per_side: int, pool: str, off_env: dict[str, str], on_env: Any
) -> dict[str, list[dict[str, Any]]]:
    """`per_side` runs of `steps` on each of an "off" and an "on" worker alive together.

    `on_env(directory)` is the "on" worker's environment, given its metrics directory.
    """
    with tempfile.TemporaryDirectory(prefix="fanfold-bench-prom-") as directory:
        workers = {
            side: WorkerProcess(
                f"observe-{side}", pool=pool, concurrency=1, env=env, log_dir=environment.LOGS
            )
            for side, env in (("off", off_env), ("on", on_env(directory)))
        }
        try:
            for worker in workers.values():
                worker.wait_ready()
            return _collect(workers, steps, timeout, per_side)
        finally:
            for worker in workers.values():
                worker.stop()


def summary(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Medians of both sides, the overhead, and the samples in the order they ran."""
    off = [r["steps_per_second"] for r in runs["off"]]
    on = [r["steps_per_second"] for r in runs["on"]]
    cpu_off = median([r["worker_cpu_us_per_step"] for r in runs["off"]])
    cpu_on = median([r["worker_cpu_us_per_step"] for r in runs["on"]])
    return {
        "figure": "steps_per_second",
        "pairs": min(len(off), len(on)),
        "off": median(off),
        "on": median(on),
        "off_samples": off,
        "on_samples": on,
        "overhead_pct": round((median(off) / median(on) - 1) * 100, 1),
        "cpu_figure": "worker_cpu_us_per_step",
        "cpu_off": cpu_off,
        "cpu_on": cpu_on,
        "cpu_overhead_pct": round((cpu_on / cpu_off - 1) * 100, 1),
        "cpu_off_samples": [r["worker_cpu_us_per_step"] for r in runs["off"]],
        "cpu_on_samples": [r["worker_cpu_us_per_step"] for r in runs["on"]],
    }
