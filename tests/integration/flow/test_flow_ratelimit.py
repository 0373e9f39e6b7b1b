"""Rate-limit turns: evenly spaced, kept per attempt, waited for without a worker."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from django.utils import timezone

from runtime import start
from runtime.core.identity import step_id
from runtime.flow.ratelimit import LEAD, turn_wait
from runtime.models import RateReservation
from runtime.store.ratelimit import reserve_turn
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


def test_ratelimit_fanout_branches_wait_for_their_turns_unclaimed(
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
