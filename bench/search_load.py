"""`bench search`'s table: runs with three search attributes each, loaded with INSERT ...
SELECT generate_series (not through the runtime), then ANALYZE. The plan test loads a small
one the same way.

Run i (1..N) has a status by i % 10 (1 failed, 1 running, 1 waiting, 7 completed), is created
N - i seconds before the load (newest last), and has `customer` (int, 1..N/10: about ten runs
each), `region` (str, eight values) and `amount` (float, 0..10,000) drawn from `random()`.
"""

from __future__ import annotations

import time

from django.db import connection

from runtime.models import Run, SearchAttribute, SearchPending

WORKFLOW = "bench.search_order"
REGIONS = ("eu-west", "eu-north", "us-east", "us-west", "ap-south", "ap-east", "sa-east", "af")
# Time-ordered ids, as the runtime makes them (UUID version 7 of the run's creation time,
# runtime.core.run_ids): the run id is what the attribute probes and the joins look up.
_ID = (
    "(lpad(to_hex(%(base)s - (%(runs)s - g) * 1000), 12, '0') || '7' "
    "|| substr(md5('bench-search-' || g), 1, 3) || '8' "
    "|| substr(md5('bench-search-' || g), 4, 15))::uuid"
)
_AT = "to_timestamp((%(base)s - (%(runs)s - g) * 1000) / 1000.0)"


def loaded(workflow: str = WORKFLOW) -> int:
    """How many runs of `workflow` the table holds, each with its 3 attributes (0 if any
    lacks them)."""
    runs = Run.objects.filter(workflow=workflow).count()
    attributes = SearchAttribute.objects.filter(run__workflow=workflow).count()
    return runs if attributes == 3 * runs else 0


def clear(workflow: str = WORKFLOW) -> None:
    """Remove the loaded runs and their attributes, pending or not (plain DELETEs: they have
    no history)."""
    run_table = Run._meta.db_table
    with connection.cursor() as cursor:
        for table in (SearchPending._meta.db_table, SearchAttribute._meta.db_table):
            cursor.execute(
                f"DELETE FROM {table} WHERE run_id IN (SELECT id FROM {run_table} "
                "WHERE workflow = %s)",
                [workflow],
            )
        cursor.execute(f"DELETE FROM {run_table} WHERE workflow = %s", [workflow])


def load(runs: int, workflow: str = WORKFLOW, seed: float = 0.42) -> float:
    """Insert `runs` runs of `workflow` with their attributes; returns the seconds taken."""
    began = time.monotonic()
    customers = max(runs // 10, 1)
    regions = "ARRAY[" + ", ".join(f"'{r}'" for r in REGIONS) + "]"
    run_table, attributes = Run._meta.db_table, SearchAttribute._meta.db_table
    values: dict[str, int | str] = {
        "base": int(time.time() * 1000),
        "runs": runs,
        "workflow": workflow,
    }
    statuses = "ARRAY['completed', 'failed', 'running', 'waiting'" + ", 'completed'" * 6 + "]"
    with connection.cursor() as cursor:
        cursor.execute("SELECT setseed(%s)", [seed])
        cursor.execute(
            f"INSERT INTO {run_table} (id, workflow, input, status, created_at, started_at, "
            "finished_at, updated_at, last_seq, wakeups, priority, admitted) "
            f'SELECT {_ID}, %(workflow)s, \'{{"args": [], "kwargs": {{}}}}\', '
            f"({statuses})[g %% 10 + 1], {_AT}, {_AT}, "
            f"CASE WHEN g %% 10 IN (2, 3) THEN NULL ELSE {_AT} END, now(), 1, 0, 0, true "
            "FROM generate_series(1, %(runs)s) g",
            values,
        )
        cursor.execute(
            f"INSERT INTO {attributes} (run_id, name, kind, num, text, at, position) "
            f"SELECT {_ID}, a.name, a.kind, CASE a.name WHEN 'customer' THEN "
            f"floor(random() * {customers})::int + 1 WHEN 'amount' THEN "
            "round((random() * 10000)::numeric, 2)::float8 END, CASE a.name WHEN 'region' THEN "
            f"({regions})[floor(random() * {len(REGIONS)})::int + 1] END, NULL, 0 "
            "FROM generate_series(1, %(runs)s) g, (VALUES ('customer', 'int'), "
            "('region', 'str'), ('amount', 'float')) AS a(name, kind)",
            values,
        )
    with connection.cursor() as cursor:  # the visibility map too: index-only probes
        cursor.execute(f"VACUUM ANALYZE {run_table}, {attributes}")
    return time.monotonic() - began


def unindex(newest: int, workflow: str = WORKFLOW) -> None:
    """Move the attributes of the `newest` loaded runs back to the pending list, as if no
    worker had drained their starts yet (the plan test's pending branch)."""
    run_table, attributes = Run._meta.db_table, SearchAttribute._meta.db_table
    pending = SearchPending._meta.db_table
    newest_runs = (
        f"SELECT id FROM {run_table} WHERE workflow = %s ORDER BY created_at DESC LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {pending} (run_id, attributes) SELECT run_id, jsonb_object_agg(name, "
            "jsonb_strip_nulls(jsonb_build_object('kind', kind, 'num', num, 'text', text, "
            f"'at', at))) FROM {attributes} WHERE run_id IN ({newest_runs}) GROUP BY run_id",
            [workflow, newest],
        )
        cursor.execute(f"DELETE FROM {attributes} WHERE run_id IN (SELECT run_id FROM {pending})")
        cursor.execute(f"VACUUM ANALYZE {pending}, {attributes}")
