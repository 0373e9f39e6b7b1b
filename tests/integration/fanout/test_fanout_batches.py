"""Set-based branch writes: many claims and reports in one sink transaction, on PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from contextlib import closing
from typing import Any

import psycopg
import pytest
from django.db import DatabaseError, connections
from django.utils import timezone

import runtime.store.fanout.branch_reports
import runtime.store.fanout.quiet_reports
import runtime.store.history.sink
from runtime.checkpoint.batching import Checkpoint
from runtime.core.branches import BranchAttempt, BranchClaim, BranchReport
from runtime.core.identity import group_id, step_id
from runtime.executor import ExecutionOutcome, execute
from runtime.fanout.branch import claim_branch
from runtime.models import Event, FanoutGroup, Run, Step
from runtime.services import start_run
from runtime.store import dialect
from runtime.store.history.sink import DatabaseSink


def _started(n: int, **options: object) -> uuid.UUID:
    run, _ = start_run("tests.fanout.squares", [n], options)
    assert execute(run.id).outcome is ExecutionOutcome.SUSPENDED
    return run.id


# The receipt the sink returned for each payload written, by the payload's key.
_receipts: dict[int, Any] = {}


def _write(payloads: Sequence[BranchClaim | BranchReport]) -> None:
    with closing(DatabaseSink()) as sink:
        written = sink.write_batch(
            [Checkpoint(f"s{i}", p, 64, sync=True) for i, p in enumerate(payloads)]
        )
    assert len(written) == len(payloads)
    for payload, receipt in zip(payloads, written, strict=True):
        _receipts[payload.key] = receipt


def _receipt(payload: BranchClaim | BranchReport) -> Any:
    """What the batch that wrote `payload` returned for it."""
    return _receipts[payload.key]


def _report(run_id: uuid.UUID, position: int, outcome: str = "completed") -> BranchReport:
    now = timezone.now()
    return BranchReport(
        run_id=run_id,
        step_id=step_id(run_id, position),
        position=position,
        group_id=group_id(run_id, 1),
        attempt=1,
        outcome=outcome,
        started_at=now,
        finished_at=now,
        result=(position - 1) ** 2 if outcome == "completed" else None,
        error={"type": "Boom", "message": str(position)} if outcome == "failed" else None,
        reason="fatal" if outcome == "failed" else "",
    )


def _seqs_are_dense(run_id: uuid.UUID) -> bool:
    seqs = list(Event.objects.filter(run_id=run_id).order_by("seq").values_list("seq", flat=True))
    return seqs == list(range(1, Run.objects.get(id=run_id).last_seq + 1))


def test_fanout_duplicate_claims_in_one_batch_have_exactly_one_winner() -> None:
    run_id = _started(3)
    sid = step_id(run_id, 2)
    claims = [BranchClaim(run_id, sid, 1) for _ in range(4)] + [BranchClaim(run_id, sid, 2)]
    _write([*claims, BranchClaim(run_id, step_id(run_id, 3), 1)])
    assert [_receipt(c).won for c in claims] == [True, False, False, False, False]
    assert _receipt(claims[0]).name == "tests.fanout.square"
    assert _receipt(claims[0]).input == {"args": [1], "kwargs": {}}
    assert Step.objects.get(id=sid).status == "running"
    again = BranchClaim(run_id, sid, 1)
    _write([again])
    assert not _receipt(again).won  # a later batch loses the conditional update
    first = BranchAttempt(run_id, 1, 1, 1)
    assert claim_branch(first) is not None and claim_branch(first) is None


def test_fanout_claims_alone_are_one_statement_without_a_transaction_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run_id = _started(3)

    def no_block(*args: object, **kwargs: object) -> None:
        raise AssertionError("a batch of claims alone should not open a transaction block")

    monkeypatch.setattr(runtime.store.history.sink.transaction, "atomic", no_block)
    claims = [BranchClaim(run_id, step_id(run_id, p), 1) for p in (1, 2, 1)]
    _write(claims)
    monkeypatch.undo()

    assert [_receipt(c).won for c in claims] == [True, True, False]
    assert sorted(
        Step.objects.filter(run_id=run_id, status="running").values_list("position", flat=True)
    ) == [1, 2]


# The server answered (a deadlock): rolled back. No answer at all: maybe committed.
_ServerError, _CutOff = psycopg.errors.DeadlockDetected, psycopg.OperationalError


@pytest.mark.parametrize("cause", [_ServerError, _CutOff])
def test_fanout_claims_alone_failing_is_retried_only_when_surely_rolled_back(
    monkeypatch: pytest.MonkeyPatch, cause: type[Exception]
) -> None:
    from django.db import OperationalError

    from runtime.checkpoint.errors import OutcomeUnknown

    run_id = _started(2)
    real = runtime.store.history.sink.execute
    failures = [cause]

    def flaky(statements: Any) -> Any:
        if failures:
            raise OperationalError("claims failed") from failures.pop()()
        return real(statements)

    monkeypatch.setattr(runtime.store.history.sink, "execute", flaky)
    claims = [BranchClaim(run_id, step_id(run_id, 1), 1)]
    if cause is _CutOff:
        with pytest.raises(OutcomeUnknown):
            _write(claims)
        assert Step.objects.get(id=step_id(run_id, 1)).status == "pending"
    else:
        _write(claims)  # reconnected and written again
        assert _receipt(claims[0]).won


def test_fanout_report_batch_that_settles_the_group_wakes_the_run_once() -> None:
    run_id = _started(5)
    _write([BranchClaim(run_id, step_id(run_id, p), 1) for p in range(1, 6)])
    wakeups = Run.objects.get(id=run_id).wakeups
    reports = [_report(run_id, p) for p in range(1, 6)]
    duplicate = _report(run_id, 3)
    _write([*reports[:3], duplicate, *reports[3:]])

    assert [_receipt(r).recorded for r in reports] == [True] * 5
    assert not _receipt(duplicate).recorded
    assert [_receipt(r).wake for r in reports].count(True) == 1
    assert Run.objects.get(id=run_id).wakeups == wakeups + 1
    assert FanoutGroup.objects.get(run_id=run_id).verdict == "succeeded"
    assert _seqs_are_dense(run_id)
    assert execute(run_id).outcome is ExecutionOutcome.COMPLETED
    assert Run.objects.get(id=run_id).result == [0, 1, 4, 9, 16]


def test_fanout_report_batch_after_the_deciding_report_is_cancelled_like_a_late_one() -> None:
    run_id = _started(4)
    _write([BranchClaim(run_id, step_id(run_id, p), 1) for p in (1, 3, 4)])
    stale = _report(run_id, 2)  # never claimed: its step is not running
    reports = [_report(run_id, 4, "failed"), stale, _report(run_id, 3, "failed")]
    _write(reports)
    assert [_receipt(r).recorded for r in reports] == [True, False, False]
    assert [_receipt(r).wake for r in reports] == [True, False, False]
    group = FanoutGroup.objects.get(run_id=run_id)
    assert (group.verdict, group.failed, group.first_failure) == ("failed", 1, 4)
    # The settle cancelled the branches still open and the one that failed after the decision.
    late = _report(run_id, 1)
    _write([late])
    assert not _receipt(late).recorded
    cancelled = Step.objects.filter(run_id=run_id, status="cancelled", result__isnull=True)
    assert sorted(cancelled.values_list("position", flat=True)) == [1, 2, 3]
    assert Event.objects.filter(run_id=run_id, type="step_failed").count() == 1
    assert _seqs_are_dense(run_id)
    assert execute(run_id).outcome is ExecutionOutcome.FAILED


def test_fanout_report_batch_with_min_successful_counts_only_up_to_the_decision() -> None:
    run_id = _started(5, min_successful=2)
    _write([BranchClaim(run_id, step_id(run_id, p), 1) for p in range(1, 6)])
    reports = [_report(run_id, p) for p in (2, 5, 1, 3)]
    _write(reports)
    assert [_receipt(r).recorded for r in reports] == [True, True, False, False]
    assert [_receipt(r).wake for r in reports] == [False, True, False, False]
    group = FanoutGroup.objects.get(run_id=run_id)
    assert (group.verdict, group.succeeded, group.failed) == ("succeeded", 2, 0)
    assert execute(run_id).outcome is ExecutionOutcome.COMPLETED
    assert Run.objects.get(id=run_id).result == [{"failed": 1}, 1, {"failed": 3}, {"failed": 4}, 16]


def test_fanout_report_batch_releases_one_slot_per_finished_branch() -> None:
    run_id = _started(6, max_concurrency=2)
    _write([BranchClaim(run_id, step_id(run_id, p), 1) for p in (1, 2)])
    reports = [_report(run_id, 1), _report(run_id, 2)]
    _write(reports)
    assert [_receipt(r).release for r in reports] == [(), (3, 4)]
    assert FanoutGroup.objects.get(run_id=run_id).released == 4
    assert (
        Step.objects.filter(run_id=run_id, position__in=[3, 4], wake_at__isnull=False).count() == 2
    )


def _recording_pipelines(
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[list[list[str]], list[str]]:
    """Record the first word of every statement each pipeline sends (framing included) and
    every write of the run table, on both the one-round and the two-round path."""
    sent: list[list[str]] = []
    run_writes: list[str] = []
    real = dialect.execute

    def recording(statements: Any, **kwargs: Any) -> Any:
        txn = dialect._local.transaction
        begun = txn.begun
        framed, _, _ = dialect._framed(statements, kwargs.get("last", False))
        sent.append([sql.split()[0] for sql, _ in framed])
        run_writes.extend(sql for sql, _ in framed if f"UPDATE {Run._meta.db_table} " in sql)
        # The framing is done again by the real call: undo what recording it did.
        txn.begun, txn.committing = begun, False
        return real(statements, **kwargs)

    def no_block(*args: object, **kwargs: object) -> None:
        raise AssertionError("reports alone should not open an atomic block")

    monkeypatch.setattr(runtime.store.history.sink.transaction, "atomic", no_block)
    monkeypatch.setattr(runtime.store.fanout.branch_reports, "execute", recording)
    monkeypatch.setattr(runtime.store.history.sink, "execute", recording)
    return sent, run_writes


def test_fanout_quiet_reports_take_one_pipeline_with_begin_and_commit_inside(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run_id = _started(3)
    _write([BranchClaim(run_id, step_id(run_id, p), 1) for p in (1, 2)])
    sent, run_writes = _recording_pipelines(monkeypatch)
    reports = [_report(run_id, p) for p in (1, 2)]
    _write(reports)
    monkeypatch.undo()

    # BEGIN, the run's row lock (a locking read), the reports' one statement, COMMIT.
    assert sent == [["BEGIN", "SELECT", "WITH", "COMMIT"]]
    assert len(run_writes) == 1  # the run row is written once per batch (its seqs)
    assert Run.objects.get(id=run_id).updated_at >= max(r.finished_at for r in reports)
    assert [_receipt(r).recorded for r in reports] == [True, True]
    assert [_receipt(r).release for r in reports] == [(), ()]
    assert not any(_receipt(r).wake for r in reports)
    assert Step.objects.filter(run_id=run_id, status="completed").count() == 2
    assert FanoutGroup.objects.get(run_id=run_id).succeeded == 2
    assert Run.objects.get(id=run_id).wakeups == 0
    assert _seqs_are_dense(run_id)
    types = list(Event.objects.filter(run_id=run_id, step_id=step_id(run_id, 2))
                 .order_by("seq").values_list("type", "payload"))  # fmt: skip
    assert types[-2:] == [("step_started", {"attempt": 1}),
                          ("step_completed", {"attempt": 1, "result": 1})]  # fmt: skip


def test_fanout_deciding_report_writes_nothing_in_one_round_without_an_error_and_takes_two(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run_id = _started(2)
    _write([BranchClaim(run_id, step_id(run_id, p), 1) for p in (1, 2)])
    _write([_report(run_id, 1)])
    sent, _ = _recording_pipelines(monkeypatch)
    errors: list[Exception] = []
    recorded = runtime.store.history.sink.execute

    def noting_errors(statements: Any, **kwargs: Any) -> Any:
        try:
            return recorded(statements, **kwargs)
        except Exception as exc:  # the server's log would hold it, and psycopg's warning
            errors.append(exc)
            raise

    monkeypatch.setattr(runtime.store.history.sink, "execute", noting_errors)
    last = _report(run_id, 2)
    _write([last])
    monkeypatch.undo()

    # The one round wrote nothing (the report would decide the group), then the two rounds;
    # no statement failed on the way (no `division by zero` in PostgreSQL's log).
    assert errors == []
    assert sent[0] == ["BEGIN", "SELECT", "WITH", "COMMIT"]
    assert sent[1][0] == "BEGIN" and sent[1][1] == "SELECT" and sent[2][-1] == "COMMIT"
    assert len(sent) == 3
    assert _receipt(last).recorded and _receipt(last).wake
    group = FanoutGroup.objects.get(run_id=run_id)
    assert (group.succeeded, group.verdict) == (2, "succeeded")
    assert Run.objects.get(id=run_id).wakeups == 1
    assert _seqs_are_dense(run_id)
    assert Event.objects.filter(run_id=run_id, type="step_completed").count() == 2


@pytest.mark.parametrize(
    "case",
    ["quiet", "stale", "cancelled run", "retry", "failure", "not all released", "min_successful"],
)
def test_fanout_one_round_writes_exactly_what_two_rounds_write(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each case once through the sink (one round where quiet) and once through the two
    rounds alone: the same rows, receipts and events."""
    outcomes = []
    for one_round in (True, False):
        options: dict[str, object] = {}
        if case == "not all released":
            options["max_concurrency"] = 2
        if case == "min_successful":
            options["min_successful"] = 2
        run_id = _started(4, **options)
        _write([BranchClaim(run_id, step_id(run_id, p), 1) for p in (1, 2)])
        reports = [_report(run_id, 1), _report(run_id, 2)]
        if case == "stale":
            reports.append(_report(run_id, 3))  # never claimed
        if case == "retry":
            reports[1] = _retrying(run_id, 2)
        if case == "failure":
            reports[1] = _report(run_id, 2, "failed")
        if case == "cancelled run":
            Run.objects.filter(id=run_id).update(status="cancelled")
        if not one_round:
            monkeypatch.setattr(runtime.store.fanout.quiet_reports, "quiet_batch", lambda *a: None)
        _write(reports)
        outcomes.append(_written(run_id, reports))
    assert outcomes[0] == outcomes[1]


def _retrying(run_id: uuid.UUID, position: int) -> BranchReport:
    report = _report(run_id, position, "failed")
    return BranchReport(**{
        **{f: getattr(report, f) for f in ("run_id", "step_id", "position", "group_id",
                                           "attempt", "started_at", "finished_at", "error")},
        "outcome": "retrying", "wake_at": report.finished_at,
    })  # fmt: skip


def _written(run_id: uuid.UUID, reports: list[BranchReport]) -> tuple[Any, ...]:
    steps = list(Step.objects.filter(run_id=run_id).order_by("position")
                 .values_list("position", "status", "attempt", "result", "error"))  # fmt: skip
    group = FanoutGroup.objects.filter(run_id=run_id).values_list(
        "succeeded", "failed", "released", "verdict", "first_failure"
    )
    events = list(Event.objects.filter(run_id=run_id).order_by("seq")
                  .values_list("seq", "type", "payload"))[-6:]  # fmt: skip
    receipts = [(_receipt(r).recorded, _receipt(r).release, _receipt(r).wake) for r in reports]
    run = Run.objects.filter(id=run_id).values_list("last_seq", "wakeups").get()
    payloads = [(t, {k: v for k, v in p.items() if k != "wake_at"}) for _, t, p in events]
    return steps, list(group), payloads, receipts, run


def _terminate(backend_pid: int) -> None:
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [backend_pid])
    finally:
        other.close()


@pytest.mark.parametrize("cause", ["server error", "cut off"])
def test_fanout_reports_failing_in_the_round_that_commits_write_nothing(
    monkeypatch: pytest.MonkeyPatch, cause: str
) -> None:
    from runtime.checkpoint.errors import OutcomeUnknown

    run_id = _started(1)  # its one report decides the group: the two rounds write it
    _write([BranchClaim(run_id, step_id(run_id, 1), 1)])
    real = runtime.store.fanout.branch_reports.execute
    failures = [cause]

    def failing_second_round(statements: Any, last: bool = False) -> Any:
        if not (last and failures):
            return real(statements, last=last)
        failures.pop()
        if cause == "cut off":  # the connection dies under the round that carries COMMIT
            [[(backend,)]] = real([("SELECT pg_backend_pid()", [])])
            _terminate(backend)
            return real(statements, last=last)
        return real([*statements, ("SELECT 1 / 0", [])], last=last)  # the server says no

    monkeypatch.setattr(runtime.store.fanout.branch_reports, "execute", failing_second_round)
    report = _report(run_id, 1)
    expected = OutcomeUnknown if cause == "cut off" else DatabaseError
    with pytest.raises(expected):  # cut off: the COMMIT may have reached the server
        _write([report])
    monkeypatch.undo()
    # Rolled back: the first round's step update and counters are not there, nothing is open.
    assert Step.objects.get(id=step_id(run_id, 1)).status == "running"
    group = FanoutGroup.objects.get(run_id=run_id)
    assert (group.succeeded, group.failed) == (0, 0)
    assert _seqs_are_dense(run_id)
    again = _report(run_id, 1)
    _write([again])
    assert _receipt(again).recorded


@pytest.mark.parametrize("cause", ["server error", "cut off"])
def test_fanout_quiet_report_failing_is_written_again_only_when_surely_rolled_back(
    monkeypatch: pytest.MonkeyPatch, cause: str
) -> None:
    from runtime.checkpoint.errors import OutcomeUnknown

    run_id = _started(2)
    _write([BranchClaim(run_id, step_id(run_id, 1), 1)])
    real = runtime.store.history.sink.execute
    failures = [cause]

    def failing_one_round(statements: Any, last: bool = False) -> Any:
        if not failures:
            return real(statements, last=last)
        failures.pop()
        if cause == "cut off":
            [[(backend,)]] = real([("SELECT pg_backend_pid()", [])])
            _terminate(backend)
            return real(statements, last=last)
        return real([*statements, ("SELECT 1 / 0", [])], last=last)

    monkeypatch.setattr(runtime.store.history.sink, "execute", failing_one_round)
    report = _report(run_id, 1)
    if cause == "cut off":
        with pytest.raises(OutcomeUnknown):  # the COMMIT may have reached the server
            _write([report])
        assert Step.objects.get(id=step_id(run_id, 1)).status == "running"
        return
    _write([report])  # refused by the server: rolled back, then the two rounds write it once
    assert _receipt(report).recorded
    assert FanoutGroup.objects.get(run_id=run_id).succeeded == 1
    assert Event.objects.filter(run_id=run_id, type="step_completed").count() == 1
    assert _seqs_are_dense(run_id)


def test_fanout_a_pipelined_transaction_commits_what_no_last_round_committed() -> None:
    run_id = _started(2)
    with dialect.PipelinedTransaction() as txn:
        dialect.execute([("UPDATE runtime_run SET wakeups = wakeups + 1 WHERE id = %s", [run_id])])
        with pytest.raises(RuntimeError), dialect.PipelinedTransaction():
            pass  # one per thread
    assert txn.begun and txn.committed
    assert Run.objects.get(id=run_id).wakeups == 1
    with pytest.raises(ZeroDivisionError), dialect.PipelinedTransaction():
        dialect.execute([("UPDATE runtime_run SET wakeups = wakeups + 1 WHERE id = %s", [run_id])])
        raise ZeroDivisionError
    assert Run.objects.get(id=run_id).wakeups == 1  # rolled back


def test_fanout_one_round_agrees_with_two_rounds_over_group_states(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """For counters the group may hold when a success comes in, the one round and the two
    rounds record the same thing (the one round refuses whatever would decide or release)."""
    real_quiet = runtime.store.fanout.quiet_reports.quiet_batch
    states = [
        (succeeded, failed, need, limit, released)
        for succeeded in (0, 2)
        for failed in (0, 1)
        for need in (None, 3)
        for limit in (0, 1)
        for released in (3, 4)
    ]
    for succeeded, failed, need, limit, released in states:
        outcomes = []
        for one_round in (True, False):
            quiet = real_quiet if one_round else (lambda *a: None)
            monkeypatch.setattr(runtime.store.fanout.quiet_reports, "quiet_batch", quiet)
            run_id = _started(4)
            FanoutGroup.objects.filter(run_id=run_id).update(
                succeeded=succeeded, failed=failed, need=need, failure_limit=limit,
                released=released,
            )  # fmt: skip
            _write([BranchClaim(run_id, step_id(run_id, 1), 1)])
            report = _report(run_id, 1)
            _write([report])
            outcomes.append(_written(run_id, [report]))
        assert outcomes[0] == outcomes[1], (succeeded, failed, need, limit, released)
