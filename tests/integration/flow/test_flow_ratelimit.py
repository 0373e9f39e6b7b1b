"""Rate-limit turns: evenly spaced, kept per attempt, waited for without a worker."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from runtime import executor, start
from runtime.core.branches import BranchAttempt
from runtime.core.identity import step_id
from runtime.executor import ExecutionOutcome
from runtime.fanout import branch
from runtime.flow import ratelimit
from runtime.flow.ratelimit import LATE, LEAD, MAX_RETAKES, turn_wait
from runtime.models import RateReservation, Step
from runtime.store.flow.ratelimit import reserve_turn
from runtime.testing import InMemoryDispatcher
from tests.integration.flow import flow_workflows as flows

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def test_ratelimit_turns_are_spaced_by_the_rate() -> None:
    turns = [reserve_turn("b", 0.25, uuid.uuid4(), 1, T0) for _ in range(4)]
    assert turns == [T0 + timedelta(seconds=0.25 * i) for i in range(4)]


def test_ratelimit_an_attempt_keeps_its_turn() -> None:
    sid = uuid.uuid4()
    first = reserve_turn("b", 1.0, sid, 1, T0)
    reserve_turn("b", 1.0, uuid.uuid4(), 1, T0)
    assert reserve_turn("b", 1.0, sid, 1, T0 + timedelta(seconds=5)) == first
    assert reserve_turn("b", 1.0, sid, 2, T0) == T0 + timedelta(seconds=2)  # a new attempt


def test_ratelimit_an_idle_bucket_starts_at_once() -> None:
    reserve_turn("b", 1.0, uuid.uuid4(), 1, T0)
    later = T0 + timedelta(minutes=5)
    assert reserve_turn("b", 1.0, uuid.uuid4(), 1, later) == later


def test_ratelimit_a_step_waiting_for_its_turn_suspends_the_run(
    dispatcher: InMemoryDispatcher,
) -> None:
    handle = start(flows.paced_twice)
    dispatcher.join()
    assert handle.wait(timeout=5) == [1, 2]
    # The second step's turn was 0.5 s after the first: the run suspended and was enqueued
    # again for a little before it (LEAD).
    delays = [r.countdown for r in dispatcher.runs if r.countdown]
    assert len(delays) == 1 and 0.0 < delays[0] <= (0.5 - LEAD.total_seconds())
    assert RateReservation.objects.count() == 2


def test_ratelimit_fanout_branches_wait_for_their_turns_holding_no_claim(
    dispatcher: InMemoryDispatcher,
) -> None:
    handle = start(flows.paced_map, [1, 2, 3])
    dispatcher.join()
    assert handle.wait(timeout=5) == [1, 2, 3]
    # At 2/s the turns are 0.5 s apart: two branches were published again for later.
    delayed = sorted(b.dispatch.countdown for b in dispatcher.branches if b.dispatch.countdown > 0)
    assert len(delayed) == 2
    assert 0.0 < delayed[0] <= 0.5 - LEAD.total_seconds() < delayed[1] <= 1.0
    turns = sorted(RateReservation.objects.values_list("at", flat=True))
    assert [(t - turns[0]).total_seconds() for t in turns] == [0.0, 0.5, 1.0]


def test_ratelimit_an_attempt_back_too_late_takes_a_new_turn() -> None:
    run_id = uuid.uuid4()
    sid = step_id(run_id, 1)
    long_ago = timezone.now() - timedelta(seconds=5)
    assert reserve_turn(flows.paced.name, 0.5, sid, 1, long_ago) == long_ago
    before = timezone.now()
    # Starting now would be 5 s after its turn: it queues again (here, at once: idle bucket).
    assert turn_wait(flows.paced, run_id, 1, 1) is None
    kept = RateReservation.objects.get(step_id=sid, attempt=1).at
    assert kept >= before


def test_ratelimit_a_slow_reservation_counts_as_late(monkeypatch: pytest.MonkeyPatch) -> None:
    # The turn handed out is the time asked for (an idle bucket), but the answer came 0.2 s
    # later: starting then would be late, so the attempt queues again instead.
    real = ratelimit.reserve_turn

    def slow(*args: Any) -> datetime:
        turn = real(*args)
        time.sleep(0.2)
        return turn

    monkeypatch.setattr(ratelimit, "reserve_turn", slow)
    run_id = uuid.uuid4()
    first_turn = timezone.now()
    wake = turn_wait(flows.paced, run_id, 1, 1)
    kept = RateReservation.objects.get(step_id=step_id(run_id, 1), attempt=1).at
    assert kept >= first_turn + timedelta(seconds=0.5)  # the next turn at 2/s, not the first
    assert wake == kept - LEAD


def test_ratelimit_an_attempt_late_at_every_look_never_starts_off_its_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every short wait oversleeps past LATE (a stalled process) while other attempts keep
    # the bucket busy: after MAX_RETAKES new turns the attempt suspends rather than start a
    # body on no turn of its own. The clock is the test's, so a slow machine cannot make the
    # bucket look idle between two looks.
    clock = [timezone.now()]
    naps: list[float] = []

    def oversleep(seconds: float) -> None:
        naps.append(seconds)
        clock[0] += timedelta(seconds=seconds) + 2 * LATE
        reserve_turn(flows.brisk.name, 0.1, uuid.uuid4(), 1, clock[0])  # someone else's

    monkeypatch.setattr(ratelimit, "current_time", lambda: clock[0])
    monkeypatch.setattr(ratelimit.time, "sleep", oversleep)
    reserve_turn(flows.brisk.name, 0.1, uuid.uuid4(), 1, clock[0])  # the next turn is 0.1 s away
    run_id = uuid.uuid4()
    wake = turn_wait(flows.brisk, run_id, 1, 1)
    assert wake == clock[0]
    assert len(naps) == MAX_RETAKES + 1


def test_ratelimit_a_branch_hands_its_claim_back_until_its_turn(
    dispatcher: InMemoryDispatcher,
) -> None:
    # The bucket is taken for the next 5 s: the branch's turn is after that.
    reserve_turn(flows.paced.name, 5.0, uuid.uuid4(), 1, timezone.now())
    handle = start(flows.paced_map, [7], priority=4)
    assert executor.execute(handle.id).outcome is ExecutionOutcome.SUSPENDED
    (sent,) = dispatcher.branches
    attempt = BranchAttempt(handle.id, sent.dispatch.position, 1, sent.group_position, 4)
    assert branch.run_branch(attempt) == "rate_limited"
    row = Step.objects.get(run_id=handle.id, position=sent.dispatch.position)
    turn = RateReservation.objects.get(step_id=row.id, attempt=1).at
    assert (row.status, row.attempt, row.lease_owner) == ("pending", 0, None)
    assert row.wake_at == turn - LEAD  # the sweep leaves it alone until then
    again = dispatcher.branches[-1]
    assert (again.dispatch.position, again.dispatch.attempt, again.priority) == (row.position, 1, 4)
    assert 4.0 < again.dispatch.countdown <= 5.0


def test_ratelimit_a_branch_without_a_limit_reads_no_step_for_it(
    dispatcher: InMemoryDispatcher,
) -> None:
    # Some registered step has a rate limit (tests.flow.paced); a branch of another step
    # learns its name from its claim, not from a query of its own.
    assert flows.paced.rate_limit is not None
    handle = start(flows.plain_map, ["a"])
    assert executor.execute(handle.id).outcome is ExecutionOutcome.SUSPENDED
    (sent,) = dispatcher.branches
    attempt = BranchAttempt(handle.id, sent.dispatch.position, 1, sent.group_position)
    with CaptureQueriesContext(connection) as queries:
        assert branch.run_branch(attempt) == "completed"
    assert [q["sql"] for q in queries.captured_queries if "runtime_step" in q["sql"]] == []
