"""`bench worker-start`: how long a Celery worker takes from launch to ready.

A prefork worker (`-c 1`) of the demo project is launched, and the time until it logs
`ready.` is taken, `--rounds` times for each of two configurations: the workflows of the demo
alone (the `agents` extra installed, its libraries never imported by Fanfold itself: the
`runtime.agents` names load on first use), and with a module of durable agents listed in
FANFOLD_WORKFLOW_MODULES (`bench.agent_workflows`, which imports pydantic-ai as a user's module
would). The import time of the agent libraries is taken apart, in a fresh interpreter, so the
agent workers' start less the user's own imports can be read. Medians of the rounds.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from typing import Any

from bench import agent_workflows, environment
from bench.environment import LOGS
from bench.workers import ROOT, WorkerProcess, child_env

# What bench.agent_workflows imports of the `agents` extra, as a user's agent module would.
LIBRARIES = "import pydantic_ai"
TARGET_SECONDS = 3.0  # issue 55: a worker with the agents extra ready within this


def launch_to_ready(name: str, timeout: float, **env: str) -> tuple[float, float]:
    """Seconds from launching one worker to its `ready.` line, and the CPU seconds its main
    process used until then (what the start costs, whatever else the machine runs)."""
    began = time.monotonic()
    worker = WorkerProcess(name, pool="prefork", concurrency=1, env=env, log_dir=LOGS)
    try:
        worker.wait_ready(timeout)
        wall = time.monotonic() - began
        return wall, worker.main_cpu_seconds() or 0.0
    finally:
        worker.stop()


def library_import_seconds() -> tuple[float, float]:
    """Seconds (wall, CPU) a fresh interpreter takes to import the agent libraries."""
    code = (
        "import time; t, c = time.perf_counter(), time.process_time(); "
        f"{LIBRARIES}; print(time.perf_counter() - t, time.process_time() - c)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=child_env(), capture_output=True,
        text=True, check=True, timeout=300,
    )  # fmt: skip
    wall, cpu = done.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def run_worker_start(rounds: int, timeout: float) -> dict[str, Any]:
    """`rounds` launches of each configuration (after one of each that warms bytecode and the
    page cache), and the agent libraries' import time."""
    agents_env = {"FANFOLD_WORKFLOW_MODULES": agent_workflows.__name__}
    launch_to_ready("start-warm", timeout)
    launch_to_ready("start-warm-agents", timeout, **agents_env)
    plain, agents, imports = [], [], []
    for i in range(rounds):  # interleaved, so a change in the machine's load hits all three
        plain.append(launch_to_ready(f"start-{i}", timeout))
        agents.append(launch_to_ready(f"start-agents-{i}", timeout, **agents_env))
        imports.append(library_import_seconds())

    def median(samples: list[tuple[float, float]], index: int) -> float:
        return round(statistics.median(s[index] for s in samples), 2)

    ready = median(plain, 0)
    return {
        "scenario": "worker-start",
        **environment.describe(),
        "pool": "prefork -c 1",
        "rounds": rounds,
        "ready_s": ready,
        "ready_s_rounds": [round(s[0], 2) for s in plain],
        "ready_cpu_s": median(plain, 1),
        "ready_with_agent_workflows_s": median(agents, 0),
        "ready_with_agent_workflows_cpu_s": median(agents, 1),
        "agent_libraries_import_s": median(imports, 0),
        "agent_libraries_import_cpu_s": median(imports, 1),
        "ready_with_agent_workflows_less_their_imports_cpu_s": round(
            median(agents, 1) - median(imports, 1), 2
        ),
        "target_s": TARGET_SECONDS,
        "within_target": ready <= TARGET_SECONDS,
    }
