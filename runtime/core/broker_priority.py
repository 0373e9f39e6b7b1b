"""A run's priority as a broker's message priority (runtime.dispatch sends with it)."""

from __future__ import annotations

MIN_PRIORITY, MAX_PRIORITY = 0, 9

AMQP_SCHEMES = frozenset({"amqp", "amqps", "pyamqp"})
# kombu's Redis transports (Sentinel is Redis behind a name) emulate priorities with lists.
REDIS_SCHEMES = frozenset({"redis", "rediss", "sentinel"})


def broker_priority(broker_url: str, priority: int) -> int | None:
    """A run's priority (0-9, higher first) as this broker's message priority, or None.

    AMQP (RabbitMQ) has the same scale, higher first, on a queue declared with
    x-max-priority: priority 0 is also what a message without one counts as. kombu's Redis
    transport serves its lists lowest number first (0 is its highest priority) and files a
    message without a priority under 0, so there the scale is reversed (9 - priority) and
    every message must carry one, priority 0 included, or it would go before everything.
    Other brokers (the in-process memory broker) have none.
    """
    if not MIN_PRIORITY <= priority <= MAX_PRIORITY:
        raise ValueError(f"priority must be from {MIN_PRIORITY} to {MAX_PRIORITY}, not {priority}")
    scheme = broker_url.split("://", 1)[0].split("+")[0].lower()
    if scheme in AMQP_SCHEMES:
        return priority
    if scheme in REDIS_SCHEMES:
        return MAX_PRIORITY - priority
    return None
