"""Signals on PostgreSQL: match, lookback, timeout, idempotent emits, async waits, workflow
emits, bad matches, retention."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from runtime import emit_signal, start
from runtime.core.errors import PayloadError
from runtime.core.matching import check_match
from runtime.messaging.signals import purge_expired_signals
from runtime.models import Event, Signal, SignalWait
from runtime.testing import InMemoryDispatcher


def test_messaging_signal_reaches_only_the_matching_wait(runs: InMemoryDispatcher) -> None:
    a = start("tests.msg.paid", "a")
    b = start("tests.msg.paid", "b")
    runs.join()
    assert emit_signal("payment.settled", {"order_id": "a", "amount": 10}) == 1
    runs.join()
    assert a.wait(timeout=5) == {"order_id": "a", "amount": 10}
    assert b.status == "waiting"
    received = Event.objects.get(run_id=a.id, type="signal_received")
    assert received.payload["payload"]["amount"] == 10
    assert emit_signal("payment.settled", {"order_id": "a"}) == 0  # a took one already


def test_messaging_signal_before_the_wait_counts_only_with_lookback(
    runs: InMemoryDispatcher,
) -> None:
    emit_signal("payment.settled", {"order_id": "early"})
    emit_signal("payment.settled", {"order_id": "early", "n": 2})
    without = start("tests.msg.paid", "early", 0.3)
    within = start("tests.msg.paid", "early", None, 60.0)
    runs.join()
    assert without.wait(timeout=5) is None
    assert within.wait(timeout=5) == {"order_id": "early"}  # the earliest one


def test_messaging_signal_idempotency_key_delivers_once(runs: InMemoryDispatcher) -> None:
    first = start("tests.msg.paid", "k")
    runs.join()
    assert emit_signal("payment.settled", {"order_id": "k"}, idempotency_key="s1") == 1
    second = start("tests.msg.paid", "k", None, 60.0)
    assert emit_signal("payment.settled", {"order_id": "k"}, idempotency_key="s1") == 0
    runs.join()
    assert first.wait(timeout=5) == {"order_id": "k"}
    assert second.wait(timeout=5) == {"order_id": "k"}  # by lookback: one signal stored
    assert Signal.objects.filter(name="payment.settled").count() == 1


def test_messaging_async_wait_and_workflow_emit(runs: InMemoryDispatcher) -> None:
    waiting = start("tests.msg.paid_async", "x")
    runs.join()
    emitter = start("tests.msg.emitter", "x")
    runs.join()
    assert emitter.wait(timeout=5) == 1
    assert waiting.wait(timeout=5) == {"order_id": "x", "by": "workflow"}
    assert Signal.objects.filter(payload__order_id="x").count() == 1  # not again on replay


def test_messaging_wait_for_signal_refuses_a_match_that_is_not_flat(
    runs: InMemoryDispatcher,
) -> None:
    run = start("tests.msg.paid", "y")
    runs.join()
    assert run.status == "waiting"
    with pytest.raises(PayloadError):
        check_match({"order": {"id": 1}})
    with pytest.raises(PayloadError):
        check_match(["order_id"])


def test_messaging_expired_signals_are_purged_in_batches(runs: InMemoryDispatcher) -> None:
    for n in range(5):
        emit_signal("old.signal", {"n": n})
    Signal.objects.update(created_at=timezone.now() - timedelta(days=2))
    emit_signal("old.signal", {"n": 99})
    assert purge_expired_signals(batch=3) == 3
    assert purge_expired_signals(batch=3) == 2
    assert purge_expired_signals(batch=3) == 0
    assert Signal.objects.count() == 1
    assert not SignalWait.objects.exists()
