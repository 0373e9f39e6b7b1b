"""Reaching the real services. Under CI=true a missing service fails the test; locally it skips."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
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

    with current_app.connection_for_write() as connection:
        channel = connection.default_channel
        channel.queue_declare(settings.CELERY_TASK_DEFAULT_QUEUE, durable=True, auto_delete=False)
        channel.queue_purge(settings.CELERY_TASK_DEFAULT_QUEUE)


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll `predicate` until it holds; TimeoutError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {what} after {timeout} s")
        time.sleep(0.05)
