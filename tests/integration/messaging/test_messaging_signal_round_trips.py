"""What delivering a signal costs on PostgreSQL: its insert, the keysets' read and one
statement that closes the waits it satisfies and wakes their runs."""

from __future__ import annotations

import uuid

import messaging_flows  # noqa: F401  (registers the workflows)
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runtime import emit_signal, start
from runtime.models import SignalWait
from runtime.testing import InMemoryDispatcher


def test_a_signal_is_delivered_in_one_statement_after_the_keysets(
    runs: InMemoryDispatcher,
) -> None:
    tag = uuid.uuid4().hex[:6]
    waiting = start("tests.msg.paid", f"order-{tag}")
    runs.join()
    assert SignalWait.objects.filter(run_id=waiting.id, closed_at__isnull=True).exists()

    with CaptureQueriesContext(connection) as queries:
        delivered = emit_signal("payment.settled", {"order_id": f"order-{tag}"})

    assert delivered == 1
    # The signal's insert, the keysets' read, and the delivery.
    assert len(queries.captured_queries) == 3
    wait = SignalWait.objects.get(run_id=waiting.id)
    assert wait.closed_at is not None and wait.payload == {"order_id": f"order-{tag}"}
    assert runs.runs[-1].run_id == waiting.id  # woken: sent to a worker
