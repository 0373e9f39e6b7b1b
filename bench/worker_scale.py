"""`bench workers --processes N`: N worker processes on one database through a pooler.

The processes are prefork children of `--hosts` worker main processes (as on that many
hosts); each runs one task at a time. `--runs` workflows run at once, each sequential steps
around a fan-out (bench.scale_workflows), every body a sleep: the limit is the database's
connections, not the CPU. Reported: steps per second, runs failed, the "too many
connections" errors in the workers' logs, the server's sessions at their peak (every
client backend, on the database and on the whole server) beside its `max_connections`, and
each worker process's connections to the pooler and to the database at their peak.

`--compare` then runs `bench seq`'s run and `bench fanout`'s durable fan-out on the same
database with their workers through the pooler, straight to the database, and straight to
it without prepared statements (what the pooler costs, apart from its hop), for the ratios.
"""

from __future__ import annotations

import re
import time
from typing import Any
from urllib.parse import quote

from django.db import connection

from bench import counting, environment, scale_workflows
from bench.db_connections import ConnectionSampler
from bench.environment import LOGS, Pool
from bench.fanout import WARM_UP_BRANCHES, durable_fanout
from bench.sequential import run_seconds, warm_up
from bench.stats import median
from bench.workers import WorkerProcess
from runtime import conf, start
from runtime.handles import RunHandle
from runtime.models import Run
from runtime.store.direct import direct_params

TOO_MANY = re.compile(rb"too many clients|remaining connection slots|too many connections")
LOGGED_ERROR = re.compile(rb"\] (ERROR|CRITICAL)/")
READY_SECONDS = 300.0


def run_worker_scale(
    processes: int,
    hosts: int,
    runs: int,
    steps: int,
    branches: int,
    body_ms: float,
    timeout: float,
) -> dict[str, Any]:
    """`runs` workflows at once on `processes` prefork children of `hosts` workers."""
    if connection.vendor != "postgresql":
        raise RuntimeError("bench workers measures PostgreSQL connections: use a postgres URL")
    per_host = [processes // hosts + (1 if i < processes % hosts else 0) for i in range(hosts)]
    env = {"FANFOLD_WORKFLOW_MODULES": scale_workflows.__name__}
    began = time.monotonic()
    workers = [
        WorkerProcess(f"scale{i}", pool="prefork", concurrency=c, env=env, log_dir=LOGS)
        for i, c in enumerate(per_host)
    ]
    try:
        for worker in workers:
            worker.wait_ready(READY_SECONDS)
        ready = time.monotonic() - began
        pids = [pid for worker in workers for pid in worker.task_pids()]
        ports = _ports()
        console = _pooler_console() if "pooler" in ports else None
        with ConnectionSampler(pids, ports.values(), 0.2, console) as sampler:
            handles = [start(scale_workflows.mixed, steps, branches, body_ms) for _ in range(runs)]
            failed = _wait_all(handles, timeout)
    finally:
        for worker in workers:
            worker.stop()
    logs = b"".join(worker.log_path.read_bytes() for worker in workers)
    seconds = run_seconds(handles)
    total = runs * (2 * steps + branches)
    peaks = sampler.peaks
    return {
        "scenario": "workers",
        **environment.describe(),
        "processes": processes,
        "hosts": hosts,
        "pooled": conf.get().DATABASE_POOLED,
        "liveness_locks": conf.get().liveness_locks,
        "runs": runs,
        "steps_per_run": 2 * steps + branches,
        "body_ms": body_ms,
        "workers_ready_seconds": round(ready, 1),
        "seconds": round(seconds, 3),
        "steps_per_second": round(total / seconds, 1),
        "runs_failed": failed,
        "too_many_connections_errors": len(TOO_MANY.findall(logs)),
        "errors_logged": len(LOGGED_ERROR.findall(logs)),
        "max_connections": _max_connections(),
        "server_connections_peak": {"all": peaks.server_all, "database": peaks.server_database},
        "connections_per_process": {
            name: peaks.process_summary(port) for name, port in ports.items()
        },
        "busy_pooled_connections_per_process": peaks.busy_summary(),
        "processes_sampled": len(peaks.per_process),
    }


def run_pooled_vs_direct(
    seq_steps: int, branches: int, repeat: int, timeout: float
) -> dict[str, Any]:
    """`bench seq`'s run and `bench fanout`'s durable fan-out on workers (prefork -c 2) whose
    connections go through the pooler, and on workers that go straight to the database, in
    `repeat` rounds whose order alternates; the medians and their ratios."""
    # The third side tells the pooler's hop from the prepared statements it costs.
    unprepared = {**_direct_env(), "FANFOLD_DATABASE_POOLED": "on"}
    sides = {"pooled": {}, "direct": _direct_env(), "direct_unprepared": unprepared}
    seq: dict[str, list[float]] = {name: [] for name in sides}
    fan: dict[str, list[float]] = {name: [] for name in sides}
    for i in range(repeat):
        for name in list(sides) if i % 2 == 0 else list(reversed(sides)):
            env = {counting.ENV: counting.counter_url(), **sides[name]}
            with environment.workers(Pool(), **env):
                warm_up(timeout)
                handle = start("examples.noop_loop", seq_steps)
                handle.wait(timeout=timeout)
                seq[name].append(seq_steps / run_seconds([handle]))
                durable_fanout(WARM_UP_BRANCHES, timeout)
                fan[name].append(durable_fanout(branches, timeout)["fan_in_ms"])
    report: dict[str, Any] = {
        name: {
            "seq_steps_per_second": round(median(seq[name]), 1),
            "fanout_fan_in_ms": round(median(fan[name]), 1),
        }
        for name in sides
    }
    pooled, direct = report["pooled"], report["direct"]
    report["seq_ratio"] = round(pooled["seq_steps_per_second"] / direct["seq_steps_per_second"], 3)
    # As a throughput ratio: the direct side's fan-in time over the pooled side's.
    report["fanout_ratio"] = round(direct["fanout_fan_in_ms"] / pooled["fanout_fan_in_ms"], 3)
    report["unprepared_seq_ratio"] = round(
        report["direct_unprepared"]["seq_steps_per_second"] / direct["seq_steps_per_second"], 3
    )
    report["unprepared_fanout_ratio"] = round(
        direct["fanout_fan_in_ms"] / report["direct_unprepared"]["fanout_fan_in_ms"], 3
    )
    report["rounds"] = repeat
    report["each_round"] = {"seq_steps_per_second": seq, "fanout_fan_in_ms": fan}
    return report


def _wait_all(handles: list[RunHandle], timeout: float) -> int:
    deadline = time.monotonic() + timeout
    ids = [handle.id for handle in handles]
    while time.monotonic() < deadline:
        left = Run.objects.filter(id__in=ids, finished_at__isnull=True).count()
        if not left:
            break
        time.sleep(0.5)
    else:
        raise TimeoutError(f"the runs did not all finish within {timeout} s")
    return Run.objects.filter(id__in=ids).exclude(status="completed").count()


def _ports() -> dict[str, int]:
    """The ports a worker's connections go to: Django's database (the pooler, when pooled),
    and the direct sessions' database."""
    pooled = int(connection.settings_dict["PORT"] or 5432)
    direct = int(direct_params().get("port") or 5432)
    if pooled == direct:
        return {"database": pooled}
    return {"pooler": pooled, "direct": direct}


def _pooler_console() -> dict[str, Any]:
    """Where PgBouncer's admin console would be: the pooler's address, Django's user."""
    params = connection.settings_dict
    return {
        "host": params["HOST"], "port": str(params["PORT"]), "user": params["USER"],
        "password": params.get("PASSWORD") or None, "connect_timeout": 5,
    }  # fmt: skip


def _direct_env() -> dict[str, str]:
    """The workers' environment for the direct side: DATABASE_URL on the database itself."""
    params = direct_params()
    user = quote(params.get("user", ""))
    password = f":{quote(params['password'])}" if params.get("password") else ""
    host, port, name = params.get("host", "127.0.0.1"), params.get("port", "5432"), params["dbname"]
    return {
        "DATABASE_URL": f"postgres://{user}{password}@{host}:{port}/{name}",
        "FANFOLD_DATABASE_POOLED": "off",
    }


def _max_connections() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SHOW max_connections")
        row = cursor.fetchone()
    return int(row[0]) if row else 0
