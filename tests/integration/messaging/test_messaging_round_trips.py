"""What a message or a signal costs on PostgreSQL: a plain send is one statement (the run
locked, the message inserted, the run woken); an emit is the signal's insert, the keysets'
read and one statement that closes the waits it satisfies and wakes their runs."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import messaging_flows  # noqa: F401  (registers the workflows)
import psycopg
import pytest
from django.db import connection

from runtime import RunFinished, emit_signal, send, start
from runtime.handles import RunHandle
from runtime.messaging.signals import emit
from runtime.models import Event, Message, Run, RunStatus, SignalWait
from runtime.store.messaging.messages import take_message
from runtime.store.messaging.streams import CHANNEL
from runtime.store.messaging.values import latest_value, upsert_value
from runtime.testing import InMemoryDispatcher
from tests.support.statements import statements_sent


def _waiting_for_payment(runs: InMemoryDispatcher) -> tuple[str, RunHandle]:
    """A run waiting for the payment signal of its own order; the order and the run."""
    order = f"order-{uuid.uuid4().hex[:6]}"
    waiting = start("tests.msg.paid", order)
    runs.join()
    assert SignalWait.objects.filter(run_id=waiting.id, closed_at__isnull=True).exists()
    return order, waiting


def test_a_signal_is_delivered_in_one_statement_after_the_keysets(
    runs: InMemoryDispatcher,
) -> None:
    order, waiting = _waiting_for_payment(runs)

    with statements_sent() as sent:
        delivered = emit_signal("payment.settled", {"order_id": order})

    assert delivered == 1
    # The signal's insert, the keysets' read, and the delivery, each prepared: the delivery
    # reads the partitioned wait table, which costs more to plan than to run.
    assert [sql.split()[0] for sql, _ in sent] == ["INSERT", "SELECT", "WITH"]
    assert all(prepared for _, prepared in sent)
    wait = SignalWait.objects.get(run_id=waiting.id)
    assert wait.closed_at is not None and wait.payload == {"order_id": order}
    assert runs.runs[-1].run_id == waiting.id  # woken: sent to a worker


def test_a_plain_message_is_sent_in_one_statement(runs: InMemoryDispatcher) -> None:
    waiting = start("tests.msg.inbox", "box", 1)
    runs.join()
    wakeups = Run.objects.get(id=waiting.id).wakeups
    sent_before = len(runs.runs)

    with statements_sent() as sent:
        message_id = send(waiting.id, "box", {"n": 1})

    assert [prepared for _, prepared in sent] == [True]  # one statement, prepared
    assert Message.objects.get(id=message_id).value == {"n": 1}
    assert Run.objects.get(id=waiting.id).wakeups == wakeups + 1
    assert len(runs.runs) == sent_before + 1  # the waiting run is sent to a worker
    Run.objects.filter(id=waiting.id).update(status=RunStatus.COMPLETED)
    with pytest.raises(RunFinished):
        send(waiting.id, "box", {"n": 2})
    assert Message.objects.filter(run_id=waiting.id).count() == 1


def test_a_recv_takes_its_message_in_one_statement_and_finds_it_again(
    runs: InMemoryDispatcher,
) -> None:
    waiting = start("tests.msg.inbox", "box", 2)
    runs.join()
    first = send(waiting.id, "box", {"n": 1})
    send(waiting.id, "other", {"n": 0})

    with statements_sent() as sent:
        took = take_message(waiting.id, "box", 900)

    assert [prepared for _, prepared in sent] == [True]
    assert took is not None and (took.id, took.value) == (first, {"n": 1})
    again = take_message(waiting.id, "box", 900)  # a replay of that position: the same one
    assert again is not None and again.id == first
    assert take_message(waiting.id, "box", 901) is None  # nothing else on the topic
    assert Message.objects.get(id=first).received_position == 900


def test_a_signal_resume_reads_its_wait_and_emitter_in_one_prepared_statement(
    runs: InMemoryDispatcher,
) -> None:
    order, waiting = _waiting_for_payment(runs)
    by = {"user": "ops", "via": "test"}
    emitted = emit(name="payment.settled", payload={"order_id": order}, by=by)
    assert emitted.delivered == 1

    with statements_sent() as sent:
        runs.join()

    waits = [(sql, prepared) for sql, prepared in sent if "runtime_signalwait" in sql]
    assert len(waits) == 1 and waits[0][1]  # the wait and its signal's emitter, prepared
    assert Run.objects.get(id=waiting.id).status == RunStatus.COMPLETED
    received = Event.objects.get(run_id=waiting.id, type="signal_received").payload
    assert received["by"] == by and received["payload"] == {"order_id": order}


def test_a_value_is_set_and_read_in_one_prepared_statement_each(
    runs: InMemoryDispatcher,
) -> None:
    run = start("tests.msg.inbox", "box", 1)
    runs.join()
    with statements_sent() as sent:
        upsert_value(run.id, "total", {"n": 1}, position=7)  # a new key
        upsert_value(run.id, "total", {"n": 2}, position=9)  # a later position: replaces
        upsert_value(run.id, "total", {"n": 0}, position=8)  # a replayed older one: kept out
        found = latest_value(run.id, "total")
    assert [prepared for _, prepared in sent] == [True] * 4
    assert found == {"n": 2}
    assert latest_value(run.id, "missing", "none") == "none"


@contextmanager
def listening_to(channel: str) -> Iterator[Callable[[], list[str]]]:
    """A connection of its own listening on `channel`; yields what it heard so far."""
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as listener:
        listener.execute(f"LISTEN {channel}")

        def heard() -> list[str]:
            return [n.payload for n in listener.notifies(timeout=0.5, stop_after=2)]

        yield heard


def test_a_value_set_notifies_its_readers_in_the_same_statement(
    runs: InMemoryDispatcher,
) -> None:
    run = start("tests.msg.inbox", "box", 1)
    runs.join()
    with listening_to(CHANNEL) as heard:
        with statements_sent() as sent:
            assert upsert_value(run.id, "total", {"n": 1}, position=7, notify=True)
            assert upsert_value(run.id, "total", {"n": 0}, position=6, notify=True)  # kept out
        # Each set wakes the readers, who read the value again.
        assert heard() == [str(run.id)] * 2
    assert len(sent) == 2 and all(prepared for _, prepared in sent)
    assert latest_value(run.id, "total") == {"n": 1}
