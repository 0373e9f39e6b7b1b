"""Many runs' plain checkpoints (or one with many rows) in ONE statement, rows sent as JSON.

The same step upsert and event insert as every other history write
(runtime.store.history.history_rows), selecting their rows from JSON documents instead of a VALUES
list of parameters.

When a group commit holds steps of several runs (many workflows in one worker), writing each
run's part as its own statement costs a round trip of work per run in the writer thread, and
that thread competes for the GIL with every workflow thread. Here the runs, step rows and
events of all the plain parts go as three JSON documents (one C-speed `json` encode each);
`jsonb_to_recordset` turns them back into rows on the server. One statement text serves
every batch size, so it is prepared once per connection.

A plain part is one that only appends: a lease guard, no run patch, no wake-ups, no cancel.
Every other part keeps its own statement (runtime.store.history.pg_statements).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

from runtime.core.json_text import text_encoder
from runtime.core.writes import LeaseGuard
from runtime.models import Run
from runtime.store.history.columns import step_columns
from runtime.store.history.history_rows import events_insert, steps_insert
from runtime.store.history.parts import RunPart

_encode = text_encoder(ensure_ascii=False, separators=(",", ":"))


def is_plain(g: RunPart) -> bool:
    """Whether a run's part of a batch only appends history."""
    return (
        isinstance(g.guard, LeaseGuard)
        and g.patch is None
        and not g.wakes
        and not g.cancel_open_steps
    )


# From this many rows one run's part is cheaper to send as JSON than as a VALUES list of
# parameters (which psycopg adapts one by one, and whose statement text differs per size).
MANY_ROWS = 32


def worth_combining(plain: Sequence[RunPart]) -> bool:
    """Whether these plain parts should go as one JSON statement."""
    if len(plain) > 1:
        return True
    return bool(plain) and len(plain[0].events) + len(plain[0].steps) >= MANY_ROWS


@cache
def runs_sql(update_fields: tuple[str, ...]) -> str:
    step_cols = ", ".join(c.name for c in step_columns())
    step_types = ", ".join(f"{c.name} {c.sql_type}" for c in step_columns())
    steps = steps_insert(
        f"SELECT {step_cols} FROM jsonb_to_recordset(%s::jsonb) AS x({step_types})", update_fields
    )
    events = events_insert(
        "SELECT x.run_id, u.last_seq - x.back, x.type, x.step_id, x.payload, x.created_at "
        "FROM jsonb_to_recordset(%s::jsonb) AS x(run_id uuid, back int, type text, step_id uuid, "
        "payload jsonb, created_at timestamptz) JOIN u ON u.id = x.run_id"
    )
    return (
        "WITH v AS (SELECT * FROM jsonb_to_recordset(%s::jsonb) AS v(id uuid, token text, n int)), "
        f"u AS (UPDATE {Run._meta.db_table} r SET last_seq = r.last_seq + v.n, updated_at = %s "
        # The ANY(ARRAY(...)) makes the run rows an index lookup: joined to the recordset
        # (which the planner guesses at 100 rows) a run table of a few thousand rows would be
        # scanned whole on every batch.
        "FROM v WHERE r.id = ANY(ARRAY(SELECT id FROM v)) AND r.id = v.id "
        "AND r.lease_token = v.token RETURNING r.id, r.last_seq), "
        f"s AS ({steps}), e AS ({events}) "
        # Fewer runs updated than sent means a lost lease: divide by zero, write nothing.
        "SELECT 1 / ((SELECT count(*) FROM u) = %s)::int"
    )


class _Texts(dict[Any, str]):
    """Datetimes and UUIDs as JSON text, each converted once per statement.

    A step's start, end and events share a handful of timestamps and one id, and
    `isoformat` is the dearest part of building the documents.
    """

    def __missing__(self, value: Any) -> str:
        text = value.isoformat() if isinstance(value, datetime) else str(value)
        self[value] = text
        return text

    def of(self, value: Any) -> Any:
        if isinstance(value, datetime | uuid.UUID):
            return self[value]
        return value


def runs_statement(
    groups: Sequence[RunPart], now: datetime, update_fields: Sequence[str]
) -> tuple[str, list[Any]]:
    """The one statement writing the plain parts of several distinct runs."""
    texts = _Texts()
    runs: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    for g in groups:
        if not isinstance(g.guard, LeaseGuard):
            raise TypeError("only plain parts (under a lease guard) go as JSON rows")
        run_id = texts[g.run_id]
        runs.append({"id": run_id, "token": g.guard.token, "n": len(g.events)})
        for row in g.steps.values():
            step = {
                c.name: run_id if c.attname is None else texts.of(getattr(row, c.attname))
                for c in step_columns()
            }
            steps.append(step)
        n = len(g.events)
        for i, draft in enumerate(g.events):
            events.append(
                {
                    "run_id": run_id,
                    "back": n - 1 - i,
                    "type": str(draft.type),
                    "step_id": None if draft.step_id is None else texts[draft.step_id],
                    "payload": draft.payload,
                    "created_at": texts[draft.at],
                }
            )
    params = [_encode(runs), now, _encode(steps), _encode(events), len(runs)]
    return runs_sql(tuple(update_fields)), params
