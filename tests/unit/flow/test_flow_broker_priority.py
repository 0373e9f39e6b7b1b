"""A run's priority as the broker's message priority: only where the scale means the same."""

from __future__ import annotations

import pytest

from runtime.dispatch import broker_priority


@pytest.mark.parametrize("url", ["amqp://guest@localhost//", "pyamqp://h//", "amqps://h//"])
def test_broker_priority_amqp_keeps_the_scale(url: str) -> None:
    assert [broker_priority(url, p) for p in (1, 5, 9)] == [1, 5, 9]


@pytest.mark.parametrize("url", ["redis://127.0.0.1:6379/0", "memory://localhost/", ""])
def test_broker_priority_none_where_it_would_mean_otherwise(url: str) -> None:
    assert broker_priority(url, 9) is None
