"""Messages between runs on PostgreSQL: order, once, before the wait, timeouts, idempotency,
durable sends, values, and errors for unknown and finished runs."""

from __future__ import annotations

import uuid

import pytest
from messaging_flows import COUNT

from runtime import RunFinished, RunNotFound, ValueNotFound, get_run, send, start
from runtime.core.errors import PayloadTooLarge
from runtime.models import Event, Message, RunValue
from runtime.testing import InMemoryDispatcher


def _events(run_id: uuid.UUID, kind: str) -> list[Event]:
    return list(Event.objects.filter(run_id=run_id, type=kind).order_by("seq"))


def test_messaging_recv_takes_messages_in_send_order_each_once(runs: InMemoryDispatcher) -> None:
    run = start("tests.msg.inbox", "approval", 3)
    runs.join()
    assert run.status == "waiting"
    for n in range(3):
        send(run.id, "approval", {"n": n})
        send(run.id, "other", {"n": -1})
    runs.join()
    assert run.wait(timeout=5) == [{"n": 0}, {"n": 1}, {"n": 2}]
    received = _events(run.id, "message_received")
    assert [e.payload["value"] for e in received] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert Message.objects.filter(run_id=run.id, received_position__isnull=True).count() == 3


def test_messaging_message_sent_before_the_wait_is_kept(runs: InMemoryDispatcher) -> None:
    run = start("tests.msg.inbox", "early", 1)
    send(run.id, "early", "hello")  # the run has not executed at all yet
    runs.join()
    assert run.wait(timeout=5) == ["hello"]


def test_messaging_recv_timeout_returns_none(runs: InMemoryDispatcher) -> None:
    run = start("tests.msg.inbox", "never", 1, 0.2)
    runs.join()
    assert run.wait(timeout=5) == [None]
    assert _events(run.id, "wait_completed")[0].payload == {"timed_out": True}


def test_messaging_idempotency_key_makes_a_repeated_send_a_no_op(runs: InMemoryDispatcher) -> None:
    run = start("tests.msg.inbox", "mail", 2, 0.3)
    first = send(run.id, "mail", "a", idempotency_key="k-1")
    again = send(run.id, "mail", "a", idempotency_key="k-1")
    assert first == again
    runs.join()
    assert run.wait(timeout=5) == ["a", None]


def test_messaging_send_from_workflow_code_is_sent_once_across_replays(
    runs: InMemoryDispatcher,
) -> None:
    target = start("tests.msg.inbox", "hi", 2, 1.0)
    sender = start("tests.msg.forward", str(target.id), "hi")
    runs.join()
    assert sender.wait(timeout=5) == 1
    assert target.wait(timeout=5) == [{"from": str(sender.id)}, None]
    assert Message.objects.filter(run_id=target.id).count() == 1
    assert COUNT[f"forward:{sender.id}"] == 1


def test_messaging_send_refuses_unknown_finished_and_oversized(
    runs: InMemoryDispatcher, settings: object
) -> None:
    with pytest.raises(RunNotFound):
        send(uuid.uuid4(), "t", 1)
    with pytest.raises(RunNotFound):
        send("not-a-run", "t", 1)
    done = start("tests.msg.echo", 1)
    runs.join()
    with pytest.raises(RunFinished) as finished:
        send(done.id, "t", 1)
    assert finished.value.code == "run_finished"
    target = start("tests.msg.inbox", "t", 1)
    with pytest.raises(PayloadTooLarge):
        send(target.id, "t", "x" * (2 * 1024 * 1024))


def test_messaging_values_are_latest_and_readable_with_a_wait(runs: InMemoryDispatcher) -> None:
    run = start("tests.msg.progress", 3)
    with pytest.raises(ValueNotFound):
        get_run(run.id).get_value("progress")
    with pytest.raises(TimeoutError):
        get_run(run.id).get_value("progress", wait=0.1)
    runs.join()
    assert get_run(run.id).get_value("progress", wait=1) == {"done": 3, "of": 3}
    send(run.id, "finish", None)
    runs.join()
    assert run.wait(timeout=5) == "done"
    assert [e.payload["value"]["done"] for e in _events(run.id, "value_set")] == [1, 2, 3]
    assert RunValue.objects.get(run_id=run.id).value == {"done": 3, "of": 3}  # after replays


def test_messaging_async_workflow_awaits_recv_and_sets_values(runs: InMemoryDispatcher) -> None:
    inbox = start("tests.msg.inbox_async", "q", 2)
    values = start("tests.msg.progress_async")
    runs.join()
    send(inbox.id, "q", 1)
    send(inbox.id, "q", 2)
    send(values.id, "finish", True)
    runs.join()
    assert inbox.wait(timeout=5) == [1, 2]
    assert values.wait(timeout=5) == "done"
    assert values.get_value("progress") == 1
