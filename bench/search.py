"""`bench search`: list queries by search attribute on a big table, and the start rate with
attributes against without.

- `equality_p95_ms`: `search.customer=C&status=S` (a random customer and status), first page
  of 50, newest first, as `GET /api/runs/` reads it (run_query, 51 rows fetched).
- `range_p95_ms`: `search.amount__gte=A&search.amount__lte=A+10` (about 0.1% of the runs),
  first page of 50; `range_1pct_p95_ms` for a range of 1%, `wide_range_p95_ms` for
  `amount__gte=A` (half of them on average); `low_cardinality_equality_p95_ms` for one of
  eight regions with `status=failed`.
- Each also as `<name>_sql_p95_ms`: the SQL statement alone (the figures above include
  Django building and compiling the query and making Run objects of the rows).
- `start_ratio`: starts per second with 3 attributes / without, alternating rounds in one
  process (the dispatcher keeps the messages in memory: only the database's cost differs).
  On PostgreSQL a start writes its attributes as one pending row (docs/design/search.md).
- `drain_attributes_per_s`: the attribute rows the drain indexes per second, moving the
  pending rows of the starts above into the attribute table as the workers' sweep does
  (`drained_runs` of them, in batches of 1,000): the work the pending list takes off the
  start, done later.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.db.models import QuerySet

from bench.search_load import REGIONS, WORKFLOW, clear, load, loaded
from bench.stats import percentile
from runtime.models import Run
from runtime.registry import workflow
from runtime.run_queries import run_query
from runtime.services import start_run
from runtime.store.runs.search_pending import drain_all
from runtime.testing import InMemoryDispatcher, use_dispatcher

STARTED = "bench.search_started"
PAGE = 50


@workflow(name=WORKFLOW, search={"customer": int, "region": str, "amount": float})
def order(ctx: Any) -> None:
    """The loaded runs' workflow (never executed)."""


@workflow(name=STARTED, search={"customer": int, "region": str, "amount": float})
def started(ctx: Any) -> None:
    """The started runs' workflow (never executed)."""


def _timed(query: Callable[[], QuerySet[Run]], samples: int) -> tuple[list[float], list[float]]:
    """Milliseconds per sample: the whole query through the ORM (build, compile, execute,
    rows into Run objects), and its SQL statement alone on a cursor (the database's part,
    which is what grows with the table)."""
    whole, statement = [], []
    for _ in range(samples):
        began = time.perf_counter()
        page = query()[: PAGE + 1]
        list(page)
        whole.append((time.perf_counter() - began) * 1000)
        sql, params = query()[: PAGE + 1].query.sql_with_params()
        with connection.cursor() as cursor:
            began = time.perf_counter()
            cursor.execute(sql, params)
            cursor.fetchall()
            statement.append((time.perf_counter() - began) * 1000)
    return whole, statement


def _queries(runs: int, samples: int, rng: random.Random) -> dict[str, float]:
    customers = max(runs // 10, 1)
    statuses = ["completed", "failed", "running", "waiting"]

    def page(**filters: Any) -> QuerySet[Run]:
        return run_query(workflow=WORKFLOW, **filters)

    def equality() -> QuerySet[Run]:
        customer = rng.randint(1, customers)
        return page(status=rng.choice(statuses), search={"customer": customer})

    def in_range(width: float) -> Callable[[], QuerySet[Run]]:
        def query() -> QuerySet[Run]:
            low = rng.uniform(0, 10000 - width)
            return page(search={"amount__gte": low, "amount__lte": low + width})

        return query

    def wide() -> QuerySet[Run]:
        return page(search={"amount__gte": rng.uniform(0, 5000)})

    def region() -> QuerySet[Run]:
        return page(status="failed", search={"region": rng.choice(REGIONS)})

    _timed(equality, 20)  # warm the caches and the connection
    report = {}
    queries = (("equality", equality), ("range", in_range(10)), ("range_1pct", in_range(100)),
               ("wide_range", wide), ("low_cardinality_equality", region))  # fmt: skip
    for name, query in queries:
        whole, statement = _timed(query, samples)
        report[f"{name}_p50_ms"] = round(percentile(whole, 50), 2)
        report[f"{name}_p95_ms"] = round(percentile(whole, 95), 2)
        report[f"{name}_sql_p95_ms"] = round(percentile(statement, 95), 2)
    return report


def _start_rates(starts: int, rounds: int, rng: random.Random) -> dict[str, float]:
    spent = {"with": 0.0, "without": 0.0}
    with use_dispatcher(InMemoryDispatcher()):
        for n in range(rounds * 2):
            side = "with" if n % 2 == 0 else "without"
            began = time.perf_counter()
            for _ in range(starts):
                search = None
                if side == "with":
                    search = {"customer": rng.randint(1, 10**5), "region": rng.choice(REGIONS),
                              "amount": round(rng.uniform(0, 10000), 2)}  # fmt: skip
                start_run(STARTED, search=search)
            spent[side] += time.perf_counter() - began
    with_rate = starts * rounds / spent["with"]
    without_rate = starts * rounds / spent["without"]
    return {
        "starts_per_s_with_attributes": round(with_rate, 1),
        "starts_per_s_without": round(without_rate, 1),
        "start_ratio": round(with_rate / without_rate, 3),
    }


def _drain_rate() -> dict[str, float]:
    """Drain the started runs' pending rows (every batch until one comes back short)."""
    began = time.perf_counter()
    drained = drain_all(seconds=float("inf"))
    seconds = time.perf_counter() - began
    clear(STARTED)
    return {
        "drained_runs": drained.runs,
        "drain_seconds": round(seconds, 2),
        "drain_attributes_per_s": round(drained.attributes / seconds, 1) if seconds else 0.0,
    }


def run_search(runs: int, samples: int, starts: int, rounds: int, reload: bool) -> dict[str, Any]:
    """Load (or reuse) `runs` runs with 3 attributes, time the queries `samples` times each,
    then compare start rates over `rounds` alternating rounds of `starts` starts."""
    if connection.vendor != "postgresql":
        raise ValueError("bench search measures PostgreSQL")
    rng = random.Random(42)
    load_seconds = None
    if reload or loaded() != runs:
        clear()
        load_seconds = round(load(runs), 1)
    report: dict[str, Any] = {
        "runs": runs,
        "attributes_per_run": 3,
        "load_seconds": load_seconds,
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    report.update(_queries(runs, samples, rng))
    report.update(_start_rates(starts, rounds, rng))
    report.update(_drain_rate())
    return report
