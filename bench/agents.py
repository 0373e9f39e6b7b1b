"""`bench agents`: what making a pydantic-ai agent durable costs per model or tool step.

Each round starts one run of `bench.agents.turns` on a real worker: the same 10-turn agent
(`FunctionModel` answering at once, nine tool calls) runs bare, then with `FanfoldDurability`,
in the same run and process, and once more with `live_events=False` (the two durable ones in
alternating order from round to round). The overhead per step is (durable - bare) / steps,
where steps are the 19 model requests and tool calls; the figure is the median over the
rounds.
"""

from __future__ import annotations

import statistics
from typing import Any

from bench import agent_workflows, environment
from bench.environment import Pool
from runtime import start

WARM_UP_ROUNDS = 2


def run_agents(rounds: int, timeout: float, pool: Pool) -> dict[str, Any]:
    """`rounds` measured runs (after warm-up ones) on workers of `pool`."""
    steps = agent_workflows.TURNS * 2 - 1
    env = {"FANFOLD_WORKFLOW_MODULES": agent_workflows.__name__}
    samples: list[dict[str, float]] = []
    with environment.workers(pool, **env):
        for i in range(WARM_UP_ROUNDS + rounds):
            timings = start(agent_workflows.turns, i % 2 == 0).wait(timeout=timeout)
            if i >= WARM_UP_ROUNDS:
                samples.append(timings)
    overheads = [(s["durable_ms"] - s["bare_ms"]) / steps for s in samples]
    quiet = [(s["quiet_ms"] - s["bare_ms"]) / steps for s in samples]
    return {
        "scenario": "agents",
        **environment.describe(),
        "pool": f"{pool.kind} -c {pool.concurrency}",
        "rounds": rounds,
        "steps_per_run": steps,
        "bare_ms": round(statistics.median(s["bare_ms"] for s in samples), 2),
        "durable_ms": round(statistics.median(s["durable_ms"] for s in samples), 2),
        "overhead_ms_per_step": round(statistics.median(overheads), 3),
        "overhead_ms_per_step_without_live_events": round(statistics.median(quiet), 3),
    }
