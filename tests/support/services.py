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


_broker_client: object | None = None


def broker_redis() -> Any:
    """A Redis client on the test broker's database, shared within a process (workers too)."""
    global _broker_client
    if _broker_client is None:
        import redis

        _broker_client = redis.Redis.from_url(os.environ["CELERY_BROKER_URL"])
    return _broker_client


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll `predicate` until it holds; TimeoutError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {what} after {timeout} s")
        time.sleep(0.05)
