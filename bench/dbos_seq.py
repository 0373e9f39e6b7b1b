"""DBOS's sequential steps, for `bench seq --vs-dbos`: run as its own process
(`python -m bench.dbos_seq STEPS ROUNDS DATABASE_URL`), so DBOS's engine and threads never share
the benchmark's. It prints one JSON line: each round's steps per second.

The same work as `examples.noop_loop`: one workflow of STEPS no-op steps, each checkpointed by
DBOS in its system database (DATABASE_URL, on the benchmark's PostgreSQL server). A run of ten
steps first pays for connections, as `bench seq`'s warm-up does for the worker.
"""

from __future__ import annotations

import json
import sys
import time

from dbos import DBOS, DBOSConfig


@DBOS.step()
def noop(i: int) -> int:
    return i


@DBOS.workflow()
def noop_loop(n: int) -> int:
    total = 0
    for i in range(n):
        total += noop(i)
    return total


def main(steps: int, rounds: int, database_url: str) -> list[float]:
    config: DBOSConfig = {
        "name": "fanfold-bench",
        "system_database_url": database_url,
        "console_log_level": "WARNING",
    }
    DBOS(config=config)
    DBOS.launch()
    try:
        noop_loop(10)
        rates = []
        for _ in range(rounds):
            began = time.perf_counter()
            noop_loop(steps)
            rates.append(round(steps / (time.perf_counter() - began), 1))
        return rates
    finally:
        DBOS.destroy()


if __name__ == "__main__":
    steps_arg, rounds_arg, url = sys.argv[1:4]
    print(json.dumps(main(int(steps_arg), int(rounds_arg), url)))
