"""`bench seq --long-steps N`: does a step cost the same at the end of a long run as in a
short one? In the same worker processes, runs of `--steps` and of N no-op steps alternate
(`--pairs` pairs, the order swapped every pair); each run's rate is from its own timestamps.
The ratio is the long runs' median rate over the short ones'; the target is 0.95.
"""

from __future__ import annotations

import statistics
from typing import Any

from bench import environment
from bench.environment import Pool
from bench.sequential import noop_run_rate, warm_up

TARGET = 0.95


def run_seq_long(
    steps: int, long_steps: int, pairs: int, timeout: float, pool: Pool
) -> dict[str, Any]:
    """`pairs` pairs of a run of `steps` and one of `long_steps` steps, alternating."""
    rates: dict[str, list[float]] = {"short": [], "long": []}
    with environment.workers(pool):
        warm_up(timeout)
        for pair in range(pairs):
            order = (("short", steps), ("long", long_steps))
            for side, count in order if pair % 2 == 0 else order[::-1]:
                rates[side].append(noop_run_rate(count, timeout))
    medians = {side: statistics.median(values) for side, values in rates.items()}
    ratio = round(medians["long"] / medians["short"], 3)
    return {
        "scenario": "seq long vs short",
        **environment.describe(),
        **pool.describe(),
        "steps": steps,
        "long_steps": long_steps,
        "pairs": pairs,
        "steps_per_second": rates,
        "median_steps_per_second": medians,
        "ratio_long_to_short": ratio,
        "target_ratio": TARGET,
        "within_target": ratio >= TARGET,
    }
