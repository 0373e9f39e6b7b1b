"""Reaching the real services. Under CI=true a missing service fails the test; locally it skips."""

from __future__ import annotations

import os
import socket

import pytest

POSTGRES = ("127.0.0.1", 5432)
REDIS = ("127.0.0.1", 6379)


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
