"""The hot statements on a partitioned history read one run's partition, not every week's:
each names its runs' ids, so PostgreSQL prunes the others, in a plan made for the values
(the first executions of a prepared statement) and in the generic plan a prepared statement
settles on (pruned when it starts, with the parameters)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta

import psycopg
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from runtime.core.branches import BranchClaim, BranchReport
from runtime.core.identity import group_id, step_id
from runtime.core.run_ids import id_at
from runtime.models import Step
from runtime.store.dialect import Statement
from runtime.store.fanout import quiet_reports
from runtime.store.fanout import report_statements as sql
from runtime.store.fanout.branch_claims import ClaimBatch
from runtime.store.fanout.fanout_groups import group_row
from runtime.store.fanout.fanout_sweeps import running_branches
from runtime.store.lifecycle.leases import renew_branch_leases
from runtime.store.lifecycle.liveness import expire_branch_leases, orphaned_branches
from runtime.store.lifecycle.partitions import ensure_partitions, period_of
from runtime.store.runs.children import step_status
from runtime.store.runs.run_rows import callback_step

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the history is partitioned on PostgreSQL"
)

NOW = timezone.now()
WEEKS = [NOW - timedelta(days=7 * n) for n in range(4)]
RUN = id_at(int(WEEKS[2].timestamp() * 1000))  # a run of two weeks ago, among four weeks
WEEK_SUFFIX = f"_h{period_of(WEEKS[2]).start:%Y%m%d}"


@pytest.fixture(autouse=True)
def weeks(db: None) -> None:
    ensure_partitions(connection.alias, [period_of(week) for week in WEEKS])


def partitions_read(statement: Statement, generic: bool) -> set[str]:
    """The history partitions the plan of `statement` reads (EXPLAIN, not run): planned for
    the values, or as the generic plan of the prepared statement, pruned at its start."""
    text, params = statement
    with transaction.atomic(), connection.cursor() as cursor:
        raw = cursor.cursor
        literals = [psycopg.ClientCursor(raw.connection).mogrify("%s", [p]) for p in params]
        numbered = iter(range(1, len(params) + 1))
        prepared = re.sub(r"%s", lambda _: f"${next(numbered)}", text)
        mode = "force_generic_plan" if generic else "force_custom_plan"
        cursor.execute(f"SET LOCAL plan_cache_mode = {mode}")
        raw.execute(f"PREPARE pruned AS {prepared}")
        arguments = f"({', '.join(literals)})" if literals else ""
        plan = raw.execute(f"EXPLAIN (COSTS OFF) EXECUTE pruned{arguments}").fetchall()
        raw.execute("DEALLOCATE pruned")
    # The scans only: a generic plan's UPDATE lists every partition as a target, but opens
    # only those its pruned scans return rows from.
    scans = "\n".join(row[0] for row in plan if " Scan " in row[0])
    return set(re.findall(r" on (runtime_\w+?_(?:h\d{8}|rest))\b", scans))


def orm_statement(update: Callable[[], object]) -> Statement:
    """The statement an ORM update sends (as text: its parameters inlined)."""
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        update()
        transaction.set_rollback(True)
    return queries.captured_queries[-1]["sql"], []


def reports(n: int) -> list[BranchReport]:
    return [
        BranchReport(RUN, step_id(RUN, p), p, group_id(RUN, 1), 1, "completed", NOW, NOW, p)
        for p in range(1, n + 1)
    ]


def statements() -> dict[str, Statement]:
    claims = [BranchClaim(RUN, step_id(RUN, p), 1) for p in (1, 2, 3)]
    continuing = [BranchClaim(RUN, step_id(RUN, 4), 1, continuing=True)]
    return {
        "claims": ClaimBatch(claims, NOW).statements[0],
        "continuing claims": ClaimBatch(continuing, NOW).statements[0],
        "reports": sql.step_statements(reports(3))[0],
        "group count": sql.count_statement(RUN, group_id(RUN, 1), 2, 1),
        "group update": sql.group_update_statement(RUN, group_id(RUN, 1), ["released = %s"], [4]),
        "quiet reports": quiet_reports.report_statement(reports(2), NOW),
        "cancel": sql.cancel_statement(RUN, (1, 4), [step_id(RUN, 5)], NOW),
        "release": sql.release_statement(RUN, 1, 4, NOW),
    }


@pytest.mark.parametrize("generic", [False, True], ids=["custom plan", "generic plan"])
@pytest.mark.parametrize("name", list(statements()))
def test_a_hot_statement_reads_its_runs_partitions_only(name: str, generic: bool) -> None:
    read = partitions_read(statements()[name], generic)
    assert read, f"{name}: no history partition in the plan"
    assert all(t.endswith(WEEK_SUFFIX) for t in read), f"{name} reads {sorted(read)}"


ORM_CALLS: dict[str, Callable[[], object]] = {
    "lease renewal": lambda: renew_branch_leases([(RUN, step_id(RUN, 1))], NOW),
    "group row": lambda: group_row(RUN, 1),
    "branch status": lambda: step_status(RUN, step_id(RUN, 1)),
    "callback by token": lambda: callback_step("0" * 64, RUN),
    "lease takeover": lambda: expire_branch_leases([(step_id(RUN, 1), 7, RUN)], NOW),
    "taken-over branches": lambda: list(running_branches([(RUN, step_id(RUN, 1))])),
}


@pytest.mark.parametrize("name", list(ORM_CALLS))
def test_an_orm_statement_by_run_reads_its_partitions_only(name: str) -> None:
    read = partitions_read(orm_statement(ORM_CALLS[name]), generic=False)
    assert read, f"{name}: no history partition in the plan"
    assert all(t.endswith(WEEK_SUFFIX) for t in read), f"{name} reads {sorted(read)}"


def plan_of(call: Callable[[], object], *, scans: bool = True) -> list[str]:
    """The plan of `call`'s statement; with `scans` False, as the planner picks it on a big
    history, where no week is read whole while an index serves (the test database's weeks
    are near empty, and how empty depends on the tests before)."""
    text, _ = orm_statement(call)
    with transaction.atomic(), connection.cursor() as cursor:
        if not scans:
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute(f"EXPLAIN (COSTS OFF) {text}")
        return [row[0] for row in cursor.fetchall()]


SCANS_OF_EVERY_WEEK: dict[str, Callable[[], object]] = {
    # A token of the earlier form (the MAC alone) names no run.
    "callback by an earlier token": lambda: callback_step("0" * 64, None),
    # A running branch may be in any week (a long-lived run's).
    "orphaned branches": lambda: orphaned_branches(),
}


@pytest.mark.parametrize("name", list(SCANS_OF_EVERY_WEEK))
def test_a_lookup_without_its_run_probes_each_week_by_an_index(name: str) -> None:
    """What cannot name its run reads every week, but each through an index (the unique
    token digests, the partial index of running steps), never by a scan of the week."""
    plan = plan_of(SCANS_OF_EVERY_WEEK[name], scans=False)
    scans = [line for line in plan if " on runtime_step_" in line]
    assert len(scans) >= len(WEEKS) + 1, plan  # the weeks and the DEFAULT partition
    assert all("Index" in line for line in scans), plan


def test_a_statement_by_step_id_alone_reads_every_week() -> None:
    """What the run ids save: without them the plan reads each week's partition."""
    by_id = f"UPDATE {Step._meta.db_table} SET wake_at = now() WHERE id = %s"
    alone: Statement = (by_id, [step_id(RUN, 1)])
    read = partitions_read(alone, generic=False)
    assert len(read) >= len(WEEKS) + 1  # the weeks and the DEFAULT partition
