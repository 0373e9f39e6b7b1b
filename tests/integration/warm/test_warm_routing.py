"""Resumes routed to the worker node that keeps the run parked (runtime.warm.routing): a parking
suspend records the node's queue, every kind of wake sends the run's message there, and the run
sweep falls back to any worker once the route has waited too long."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from celery import Celery
from warm_flows import STARTS

from runtime import emit_signal, get_run, send, start
from runtime.core.clock import current_time
from runtime.models import Run
from runtime.recovery.run_sweep import due_runs
from runtime.testing import InMemoryDispatcher
from runtime.warm import routing
from runtime.warm.cache import warm_runs

NODE = "worker-a@host"
QUEUE = routing.node_queue_name(NODE)


@pytest.fixture
def node() -> Iterator[str]:
    """This process is the worker node NODE, as `celery worker -n worker-a@host` makes it."""
    app = Celery("routing-test", broker="redis://127.0.0.1:6379/15", set_as_current=False)
    assert routing.consume_node_queue(SimpleNamespace(app=app, hostname=NODE)) == QUEUE
    try:
        yield QUEUE
    finally:
        routing.forget_node_queue()


def _parked(runs: InMemoryDispatcher, ops: list[list[Any]]) -> uuid.UUID:
    return _parked_run(runs, "tests.warm.program", ops)


def _parked_run(runs: InMemoryDispatcher, workflow: str, *args: Any) -> uuid.UUID:
    run_id = start(workflow, *args).id
    runs.join()
    assert run_id in warm_runs()
    runs.runs.clear()
    return run_id


def test_a_worker_node_consumes_its_own_queue() -> None:
    app = Celery("routing-test", broker="redis://127.0.0.1:6379/15", set_as_current=False)
    try:
        assert routing.consume_node_queue(SimpleNamespace(app=app, hostname=NODE)) == QUEUE
        assert QUEUE in app.amqp.queues.consume_from
        assert routing.parked_here() == QUEUE
    finally:
        routing.forget_node_queue()
    assert routing.parked_here() is None


@pytest.mark.parametrize(
    ("broker", "changes"),
    [
        ("memory://", {}),
        ("redis://127.0.0.1:6379/15", {"WARM_ROUTE_SECONDS": 0}),
        ("redis://127.0.0.1:6379/15", {"WARM_RUNS": 0}),
    ],
)
def test_no_node_queue_for_the_embedded_broker_or_with_routing_off(
    settings: Any, monkeypatch: pytest.MonkeyPatch, broker: str, changes: dict[str, Any]
) -> None:
    settings.FANFOLD = {**settings.FANFOLD, **changes}
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)  # Celery reads it before `broker`
    app = Celery("routing-test", broker=broker, set_as_current=False)
    assert routing.consume_node_queue(SimpleNamespace(app=app, hostname=NODE)) == ""
    assert not any(name.startswith(routing.QUEUE_PREFIX) for name in app.amqp.queues.consume_from)
    assert routing.parked_here() is None


def test_a_parking_suspend_records_the_node_and_a_message_is_sent_there(
    runs: InMemoryDispatcher, node: str
) -> None:
    run_id = _parked(runs, [["recv", "a"], ["recv", "b"]])
    assert Run.objects.get(id=run_id).warm_queue == node
    send(run_id, "a", "A")  # the one-statement send
    send(run_id, "b", "B", idempotency_key="b-1")  # the transaction's send
    assert [(sent.run_id, sent.queue) for sent in runs.runs] == [(run_id, node)] * 2
    runs.join()
    assert get_run(run_id).wait(timeout=5) == ["A", "B"]
    assert STARTS[str(run_id)] == 1  # the resume went on from the parked workflow


def test_a_signal_and_an_update_go_to_the_node_too(runs: InMemoryDispatcher, node: str) -> None:
    signal_run = start("tests.warm.on_signal", "t1").id
    runs.join()
    assert Run.objects.get(id=signal_run).warm_queue == node
    runs.runs.clear()
    emit_signal("tests.warm.ping", {"tag": "t1"})
    assert [(sent.run_id, sent.queue) for sent in runs.runs] == [(signal_run, node)]
    runs.join()
    assert get_run(signal_run).wait(timeout=5) == {"tag": "t1"}
    updated = _parked_run(runs, "tests.warm.updated")
    with pytest.raises(TimeoutError):  # accepted; the run answers when it is run below
        get_run(updated).update("add", 2, timeout=0.05)
    assert [(sent.run_id, sent.queue) for sent in runs.runs] == [(updated, node)]
    runs.join()
    assert get_run(updated).wait(timeout=5) == 2


def test_a_timer_goes_to_the_node(runs: InMemoryDispatcher, node: str) -> None:
    run_id = start("tests.warm.program", [["sleep", 0.2], ["recv", "a"]]).id
    runs.join()
    (timer,) = [sent for sent in runs.runs if sent.run_id == run_id and sent.countdown]
    assert timer.queue == node


def test_a_run_not_parked_is_sent_to_any_worker(
    runs: InMemoryDispatcher, node: str, settings: Any
) -> None:
    settings.FANFOLD = {**settings.FANFOLD, "WARM_RUNS": 0}
    run_id = start("tests.warm.program", [["recv", "a"]]).id
    runs.join()
    assert Run.objects.get(id=run_id).warm_queue is None
    runs.runs.clear()
    send(run_id, "a", "A")
    assert [sent.queue for sent in runs.runs] == [None]


def test_an_async_run_is_not_routed(runs: InMemoryDispatcher, node: str) -> None:
    run_id = start("tests.warm.program_async", ["a"]).id
    runs.join()
    assert Run.objects.get(id=run_id).warm_queue is None


@pytest.mark.parametrize(("sweep_interval", "route_wait"), [(30, 2), (1, 10)])
def test_the_sweep_falls_back_to_any_worker_once_the_route_waited_its_time(
    runs: InMemoryDispatcher, node: str, settings: Any, sweep_interval: int, route_wait: int
) -> None:
    """A routed run waits FANFOLD_WARM_ROUTE_SECONDS, not the sweep's grace for a run sent to
    the run queue (a sweep interval, at least a second), whichever is shorter."""
    settings.FANFOLD = {
        **settings.FANFOLD,
        "SWEEP_INTERVAL": sweep_interval,
        "WARM_ROUTE_SECONDS": route_wait,
    }
    routed, plain = (_parked(runs, [["recv", "a"]]) for _ in range(2))
    now = current_time()
    Run.objects.filter(id=routed).update(wake_at=now - timedelta(seconds=5))
    Run.objects.filter(id=plain).update(wake_at=now - timedelta(seconds=5), warm_queue=None)
    expected = routed if route_wait < 5 else plain
    assert [run_id for run_id, _ in due_runs()] == [expected]
    assert Run.objects.get(id=routed).warm_queue == (None if expected == routed else node)
    if expected == plain:  # the routed run falls back once its own wait is over
        later = current_time() - timedelta(seconds=route_wait + 1)
        Run.objects.filter(id=routed).update(wake_at=later)
        assert [run_id for run_id, _ in due_runs()] == [routed]
    assert Run.objects.get(id=routed).warm_queue is None  # its next resumes go to any worker
