"""How a woken run's message leaves: from the background publisher once the wake committed,
a burst of wakes as few batch messages, and a message lost on the way sent again by the run
sweep (the wake left the run due)."""

from __future__ import annotations

import uuid

import messaging_flows  # noqa: F401  (registers the workflows)
import pytest

from runtime import dispatch, emit_signal, start
from runtime.dispatch import EXECUTE_RUN, EXECUTE_RUNS
from runtime.executor import execute
from runtime.models import Run, RunStatus
from runtime.recovery import run_sweep
from runtime.testing import InMemoryDispatcher, use_dispatcher
from tests.support.dispatch import LossyDispatcher


def _waiting(runs: InMemoryDispatcher, count: int) -> tuple[str, list[uuid.UUID]]:
    tag = uuid.uuid4().hex[:6]
    ids = [start("tests.msg.paid", f"{tag}-{i}").id for i in range(count)]
    runs.join()
    assert set(Run.objects.filter(id__in=ids).values_list("status", flat=True)) == {
        RunStatus.WAITING
    }
    return tag, ids


def test_woken_runs_leave_through_the_background_publisher(runs: InMemoryDispatcher) -> None:
    tag, ids = _waiting(runs, 12)
    with use_dispatcher(LossyDispatcher()) as lossy:
        assert isinstance(lossy, LossyDispatcher)
        for i in range(len(ids)):
            assert emit_signal("payment.settled", {"order_id": f"{tag}-{i}"}) == 1
        assert dispatch.flush(10)
    carried: list[str] = []
    for m in lossy.broker.delivered:  # one run alone, or the runs held at send time together
        if m.task == EXECUTE_RUN:
            carried += m.args
        else:
            assert m.task == EXECUTE_RUNS
            carried += m.args[0]
    assert carried == [str(rid) for rid in ids]  # each woken run once, in the order woken
    assert lossy.resent == []  # nothing was sent before the emit returned


def test_a_wake_message_lost_in_the_background_is_sent_again_by_the_sweep(
    runs: InMemoryDispatcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    tag, (rid,) = _waiting(runs, 1)
    with use_dispatcher(LossyDispatcher()) as lossy:
        assert isinstance(lossy, LossyDispatcher)
        lossy.broker.fail_next_request()
        assert emit_signal("payment.settled", {"order_id": f"{tag}-0"}) == 1
        assert dispatch.flush(10)
        assert lossy.broker.delivered == []  # lost: the wake is committed, its message is not
        monkeypatch.setattr(run_sweep, "overdue_grace", lambda depth: 0.0)
        run_sweep.sweep_once()
    assert lossy.resent == [rid]
    execute(rid)
    run = Run.objects.get(id=rid)
    assert (run.status, run.result) == (RunStatus.COMPLETED, {"order_id": f"{tag}-0"})
