"""`bench history`'s empty and full database, one database switched between the two.

Measuring the empty database before the load and the full one after it put minutes between
the two (the load itself), and this host's speed drifts by a factor of two over minutes: the
ratio swung from 0.45 to 2.17 between runs of the same code. Here the loaded history is
switched out and in between short rounds, so that the two conditions alternate and each one's
rounds spread over the same stretch of time. On a partitioned database the loaded weeks' step
and event partitions (the week the purge retires and the weeks it keeps, bench.history_kept)
are detached (empty) and attached again (full): the same tables, indexes,
buffers, worker and connections, differing only by the history. A CHECK constraint matching
each partition's bounds, added while it is empty, lets ATTACH skip the scan of its rows, so a
switch costs milliseconds whatever the history's size. What stays in both conditions is the
run table's row of each loaded run (the run table is not partitioned): a few percent of the
history's bytes.

Where the history is not partitioned (SQLite) nothing can be switched: the empty rounds run
before the load and the full ones after it, and the report says so (`conditions`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from django.db import connection, transaction

from runtime.models import Event, Step
from runtime.store.lifecycle.partitions import Period, ensure_partitions, is_partitioned

# The tables the loader fills beside the run table, which is not partitioned.
_LOADED = (Step, Event)
BOUNDS_SUFFIX = "_bounds"  # the CHECK constraint of a loaded partition's bounds


def bound(period: Period) -> None:
    """Create a week's partitions, each loaded table's with a CHECK of its bounds (before
    its load: added to an empty table, the constraint costs no scan)."""
    ensure_partitions(connection.alias, [period])
    low, high = period.low, period.high
    with transaction.atomic(), connection.cursor() as cursor:
        for model in _LOADED:
            table = period.table(model)
            # A run stopped before its purge leaves its week behind, bounds and all.
            bounds = table + BOUNDS_SUFFIX
            cursor.execute(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {bounds}")
            cursor.execute(
                f"ALTER TABLE {table} ADD CONSTRAINT {bounds} "
                f"CHECK (run_id >= '{low}' AND run_id < '{high}')"
            )


class HistorySwitch:
    """The loaded weeks' partitions, attached (`full`) or detached (`empty`)."""

    def __init__(self, periods: Sequence[Period]) -> None:
        self.periods = list(periods)
        self.switchable = is_partitioned(connection.alias)
        self.attached = True

    def full(self) -> None:
        self.switch(full=True)

    def switch(self, full: bool) -> None:
        """Attach the weeks' partitions (`full`) or detach them, in one transaction."""
        attach = full
        if not self.switchable or self.attached == attach:
            return
        with transaction.atomic(), connection.cursor() as cursor:
            for period, model in itertools.product(self.periods, _LOADED):
                parent, table = model._meta.db_table, period.table(model)
                if attach:
                    cursor.execute(
                        f"ALTER TABLE {parent} ATTACH PARTITION {table} "
                        f"FOR VALUES FROM ('{period.low}') TO ('{period.high}')"
                    )
                else:
                    cursor.execute(f"ALTER TABLE {parent} DETACH PARTITION {table}")
        self.attached = attach
