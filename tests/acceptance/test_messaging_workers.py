"""Messages, values and signals on a real prefork worker (`celery -A config worker`, the
default pool): send order, each message received once, messages sent before the wait, signal
lookback, timeouts, idempotent sends, durable sends and emits on replay, debounce with the last
arguments and each on_limit policy."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from runtime import emit_signal, send, start
from runtime.handles import RunHandle
from runtime.models import Event, Message, Run, Signal, SignalWait
from tests.acceptance import messaging_flows as flows
from tests.support.waiting import wait_until
from tests.support.workers import WorkerProcess, running_worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

WORKER_ENV = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE}


@pytest.fixture
def worker(request: pytest.FixtureRequest, counters_redis: Any) -> Iterator[WorkerProcess]:
    """One prefork worker -c 2, Celery's default pool, started after the broker's flush."""
    with running_worker(f"msg-{request.node.name[-20:]}", "prefork", 2, **WORKER_ENV) as w:
        yield w


def _waiting(handle: RunHandle) -> None:
    wait_until(lambda: Run.objects.get(id=handle.id).status == "waiting", 60, message="waiting")


def _types(run_id: Any) -> list[str]:
    rows = Event.objects.filter(run_id=run_id).order_by("seq").values_list("type", flat=True)
    return list(rows)


def test_messaging_workers_receive_in_send_order_each_message_once(
    counters_redis: Any, worker: WorkerProcess
) -> None:
    run = start(flows.inbox, "jobs", 5)
    _waiting(run)
    for n in range(5):
        send(run.id, "jobs", {"n": n})
    send(run.id, "other", "not this topic")
    assert run.wait(timeout=60) == [{"n": n} for n in range(5)]
    received = Message.objects.filter(run_id=run.id, topic="jobs").order_by("id")
    assert [m.received_position for m in received] == sorted(
        {m.received_position for m in received}  # type: ignore[type-var]
    )
    assert _types(run.id).count("message_received") == 5
    assert Message.objects.get(run_id=run.id, topic="other").received_position is None


def test_messaging_workers_messages_sent_before_the_wait_wait_for_it(
    counters_redis: Any, worker: WorkerProcess
) -> None:
    run = start(flows.gated_inbox, 3)
    _waiting(run)  # at recv("gate"): the data below is sent before its recv("data")
    for n in range(3):
        send(run.id, "data", n)
    send(run.id, "gate", "open")
    assert run.wait(timeout=60) == [0, 1, 2]


def test_messaging_workers_recv_and_signal_time_out_as_none(
    counters_redis: Any, worker: WorkerProcess
) -> None:
    quiet = start(flows.inbox, "never", 1, 0.5)
    unpaid = start(flows.paid, "no-such-order", 0.5)
    assert quiet.wait(timeout=60) == [None]
    assert unpaid.wait(timeout=60) is None
    assert "wait_completed" in _types(quiet.id)
    assert SignalWait.objects.get(run_id=unpaid.id).signal_id is None
    # A signal emitted after the timeout finds no open wait.
    assert emit_signal("accmsg.settled", {"order_id": "no-such-order"}) == 0


def test_messaging_workers_idempotent_send_is_received_once(
    counters_redis: Any, worker: WorkerProcess
) -> None:
    run = start(flows.inbox, "mail", 2, 2.0)
    first = send(run.id, "mail", "hello", idempotency_key="mail-17")
    again = send(run.id, "mail", "hello again", idempotency_key="mail-17")
    assert first == again
    assert run.wait(timeout=60) == ["hello", None]
    assert Message.objects.filter(run_id=run.id).count() == 1


def test_messaging_workers_durable_send_and_emit_happen_once_over_replays(
    counters_redis: Any, worker: WorkerProcess
) -> None:
    target = start(flows.inbox, "forwarded", 2, 3.0)
    waiter = start(flows.paid_twice, "wf-1")
    _waiting(waiter)
    sender = start(flows.forward, str(target.id), 4)
    emitter = start(flows.emitter, "wf-1", 4)
    assert sender.wait(timeout=60) == 4
    assert emitter.wait(timeout=60) == 1
    # Four suspensions each replayed the send and the emit: one message, one signal.
    assert int(counters_redis.get(flows.FORWARDS)) == 4
    assert int(counters_redis.get(flows.EMITS)) == 4
    assert target.wait(timeout=60) == [{"from": str(sender.id)}, None]
    assert Message.objects.filter(run_id=target.id).count() == 1
    assert Signal.objects.filter(name="accmsg.settled", payload__by="workflow").count() == 1
    # The waiter took that one signal once: its second wait timed out.
    assert waiter.wait(timeout=60) == [{"order_id": "wf-1", "by": "workflow"}, None]


def test_messaging_workers_signal_reaches_every_matching_wait_and_lookback(
    counters_redis: Any, worker: WorkerProcess
) -> None:
    emit_signal("accmsg.settled", {"order_id": "early", "n": 1})
    emit_signal("accmsg.settled", {"order_id": "early", "n": 2})
    within = start(flows.paid, "early", None, 3600.0)
    without = start(flows.paid, "early", 1.0)
    assert within.wait(timeout=60) == {"order_id": "early", "n": 1}  # the earliest one
    assert without.wait(timeout=60) is None
    waiters = [start(flows.paid, "many") for _ in range(4)]
    other = start(flows.paid, "someone-else", 2.0)
    for handle in waiters:
        _waiting(handle)
    assert emit_signal("accmsg.settled", {"order_id": "many", "amount": 10}) == 4
    for handle in waiters:
        assert handle.wait(timeout=60) == {"order_id": "many", "amount": 10}
        assert _types(handle.id).count("signal_received") == 1
    assert other.wait(timeout=60) is None


def test_messaging_workers_debounce_starts_one_run_with_the_last_arguments(
    counters_redis: Any, worker: WorkerProcess
) -> None:
    window = timedelta(seconds=1)
    handles = [start(flows.echo, n, debounce=window, debounce_key="user-42") for n in range(4)]
    assert len({h.id for h in handles}) == 1
    assert handles[0].wait(timeout=60) == 3
    assert Run.objects.filter(workflow="tests.accmsg.echo").count() == 1


def test_messaging_workers_on_limit_skip(counters_redis: Any, worker: WorkerProcess) -> None:
    first = start(flows.single_skip, "a")
    _waiting(first)
    second = start(flows.single_skip, "b")
    assert Run.objects.get(id=second.id).status == "cancelled"
    reason = Event.objects.get(run_id=second.id, type="run_cancelled").payload["reason"]
    assert reason == "skipped"
    send(first.id, "go", 1)
    assert first.wait(timeout=60) == "a"


def test_messaging_workers_on_limit_cancel_running(
    counters_redis: Any, worker: WorkerProcess
) -> None:
    first = start(flows.single_replace, "a")
    _waiting(first)
    second = start(flows.single_replace, "b")
    assert Run.objects.get(id=first.id).status == "cancelled"
    _waiting(second)
    send(second.id, "go", 1)
    assert second.wait(timeout=60) == "b"


def test_messaging_workers_on_limit_queue(counters_redis: Any, worker: WorkerProcess) -> None:
    first = start(flows.single_queue, "a")
    _waiting(first)
    second = start(flows.single_queue, "b")
    assert Run.objects.get(id=second.id).admitted is False
    send(second.id, "go", 2)  # waits in its mailbox until its turn
    send(first.id, "go", 1)
    assert first.wait(timeout=60) == "a"
    assert second.wait(timeout=60) == "b"
    order = Run.objects.filter(id__in=[first.id, second.id]).order_by("finished_at")
    assert [r.id for r in order] == [first.id, second.id]
