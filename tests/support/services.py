"""Reaching the real services. Under CI=true a missing service fails the test; locally it skips."""

from __future__ import annotations

import os
import socket
from typing import Any

import pytest

POSTGRES = ("127.0.0.1", 5432)
REDIS = ("127.0.0.1", 6379)
RABBITMQ = ("127.0.0.1", 5672)


def reachable(address: tuple[str, int], timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection(address, timeout=timeout):
            return True
    except OSError:
        return False


def require(address: tuple[str, int], name: str) -> None:
    """Fail (CI) or skip (local) when `name` at `address` does not answer."""
    if reachable(address):
        return
    message = f"{name} is not reachable at {address[0]}:{address[1]}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message}, and CI=true requires it", pytrace=False)
    pytest.skip(message)


_counters_client: object | None = None


def counters_url() -> str:
    """Where step bodies of the acceptance tests count themselves: TEST_COUNTERS_REDIS_URL,
    else the broker's own database when the broker is Redis."""
    url = os.environ.get("TEST_COUNTERS_REDIS_URL") or os.environ["CELERY_BROKER_URL"]
    if not url.startswith("redis"):
        raise RuntimeError("set TEST_COUNTERS_REDIS_URL when the broker is not Redis")
    return url


def counters_redis_client() -> Any:
    """A Redis client on the counters database, shared within a process (workers too)."""
    global _counters_client
    if _counters_client is None:
        import redis

        _counters_client = redis.Redis.from_url(counters_url())
    return _counters_client


def purge_broker_queue() -> None:
    """Drop every message waiting on the test broker's default queue."""
    from celery import current_app
    from django.conf import settings

    # Declared as the app declares it (x-max-priority on RabbitMQ): other arguments would fail.
    queue = current_app.amqp.queues[settings.CELERY_TASK_DEFAULT_QUEUE]
    with current_app.connection_for_write() as connection:
        bound = queue.bind(connection.default_channel)
        bound.declare()
        bound.purge()


def queued_lists(queue: str | None = None) -> list[str]:
    """The Redis lists of `queue` (None: the default queue), one per priority step, in the
    order kombu's Redis transport reads them: its priority 0 (the queue's own name) first."""
    from celery import current_app

    queue = queue or current_app.conf.task_default_queue
    options = current_app.conf.broker_transport_options or {}
    steps = options.get("priority_steps", [0, 3, 6, 9])
    sep = options.get("sep", "\x06\x16")
    return [queue if step == 0 else f"{queue}{sep}{step}" for step in steps]
