"""Fixtures for the publisher's unit tests: no services, the in-memory fake transport."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

import pytest

from publisher.fake import FakeTransport
from publisher.messages import Message, Routing
from publisher.metrics import counters


@pytest.fixture(autouse=True)
def fresh_counters() -> Iterator[None]:
    counters.reset()
    yield
    counters.reset()


@pytest.fixture
def fake() -> FakeTransport:
    return FakeTransport()


class MakeMessages(Protocol):
    def __call__(
        self, count: int, routing: Routing | None = None, prefix: str = "m"
    ) -> list[Message]: ...


@pytest.fixture
def make_messages() -> MakeMessages:
    """Builds ``count`` messages of one routing, keyed ``<prefix>0``, ``<prefix>1``, ..."""

    def make(count: int, routing: Routing | None = None, prefix: str = "m") -> list[Message]:
        return [
            Message("tests.task", f"{prefix}{i}", args=[i], routing=routing or Routing())
            for i in range(count)
        ]

    return make
