"""What a run's admin page shows of its messages, values and signals (runtime.messaging).

A mailbox may hold many messages, so the page shows the newest `MESSAGES_SHOWN` with the
counts received and waiting; values are one row per key (the latest); signals are the ones
the run took (and the waits still open), one row per `ctx.wait_for_signal` position.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from runtime.admin.display import compact_json, timestamp
from runtime.models import Message, Run, RunValue, SignalWait

MESSAGES_SHOWN = 50
VALUES_SHOWN = 100
SIGNALS_SHOWN = 100


def messaging_context(run: Run) -> dict[str, Any]:
    """The run page's mailbox, values and signals, newest messages first."""
    return {**_messages(run), **_values(run), **_signals(run)}


def _messages(run: Run) -> dict[str, Any]:
    mailbox = Message.objects.filter(run_id=run.id)
    counts = mailbox.aggregate(
        total=Count("id"), received=Count("id", filter=Q(received_position__isnull=False))
    )
    newest = mailbox.order_by("-id")[:MESSAGES_SHOWN]
    return {
        "message_total": counts["total"],
        "message_received": counts["received"],
        "message_rows": [
            {
                "message": message,
                "value": compact_json(message.value),
                "sent": timestamp(message.created_at),
                "received": timestamp(message.received_at),
            }
            for message in newest
        ],
    }


def _values(run: Run) -> dict[str, Any]:
    values = RunValue.objects.filter(run_id=run.id).order_by("key")[:VALUES_SHOWN]
    return {
        "value_rows": [
            {"item": item, "value": compact_json(item.value), "updated": timestamp(item.updated_at)}
            for item in values
        ]
    }


def _signals(run: Run) -> dict[str, Any]:
    waits = SignalWait.objects.filter(run_id=run.id).order_by("position")[:SIGNALS_SHOWN]
    return {
        "signal_rows": [
            {
                "wait": wait,
                "match": compact_json(wait.match),
                "payload": compact_json(wait.payload) if wait.signal_id is not None else "",
                "state": _state(wait),
                "closed": timestamp(wait.closed_at),
            }
            for wait in waits
        ]
    }


def _state(wait: SignalWait) -> str:
    if wait.signal_id is not None:
        return "taken"
    return "waiting" if wait.closed_at is None else "timed out"
