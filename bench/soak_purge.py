"""`bench soak`'s purge: Fanfold's retention purge over the soak's finished runs, once a minute.

The workers' own retention passes run through the soak too, but on PostgreSQL the history is
partitioned by week and a pass deletes a due run's rows only once its week can go whole or is
a week past due (runtime.lifecycle.retention.retention_pass): a soak of minutes would never see
them delete anything. So a thread of the bench runs `purge` itself, as `fanfold purge
--older-than` does (row deletes in batches, paced as the workers' pass is, bounded to the
pass's few seconds), over the soak's workflows only: no other finished run of the database is
touched.
"""

from __future__ import annotations

import threading
import time

from django.db import connection
from django.db.models import Q

from bench.soak_workflows import PREFIX, RETENTION
from runtime.lifecycle.retention import DEFAULT_PACE, PASS_SECONDS, older_than, purge

INTERVAL = 60.0  # seconds, as the workers' passes


class SoakPurge(threading.Thread):
    """Purges every `interval` seconds until stopped; counts what it deleted and any failure."""

    def __init__(self, interval: float = INTERVAL) -> None:
        super().__init__(name="bench-soak-purge", daemon=True)
        self.interval = interval
        self.stopping = threading.Event()
        self.passes = 0
        self.purged = 0  # runs deleted so far
        self.failures: list[str] = []

    def run(self) -> None:
        try:
            while not self.stopping.wait(self.interval):
                self.purge_once()
        finally:
            connection.close()  # this thread's own connection

    def purge_once(self) -> None:
        rule = older_than(RETENTION) & Q(workflow__startswith=PREFIX)
        try:
            report = purge(rule, pace=DEFAULT_PACE, deadline=time.monotonic() + PASS_SECONDS)
        except Exception as exc:  # reported in the soak's errors; the next pass tries again
            self.failures.append(f"purge: {exc!r}")
            return
        self.passes += 1
        self.purged += report.runs

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=PASS_SECONDS * 3)
