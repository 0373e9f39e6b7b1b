"""Test-wide setup: service requirements by tier and a clean broker database.

The environment defaults (real Postgres and Redis, short leases) live in config/test_settings.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.services import (
    POSTGRES,
    RABBITMQ,
    REDIS,
    counters_url,
    purge_broker_queue,
    require,
)

# Tiers that scripts/test runs in one process after the parallel part: they start real worker
# processes and web servers, drive a browser, build a wheel or time what they see.
SERIAL_TIERS = ("/acceptance/", "/docs/", "/packaging/")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = str(item.path)
        if any(tier in path for tier in SERIAL_TIERS):
            item.add_marker(pytest.mark.serial)
        if "/integration/" in path:
            item.add_marker(pytest.mark.postgres)
        if "/acceptance/" in path:
            item.add_marker(pytest.mark.postgres)
            item.add_marker(pytest.mark.redis)
            item.add_marker(pytest.mark.worker)


@pytest.fixture(autouse=True)
def _require_services(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("postgres"):
        require(POSTGRES, "PostgreSQL")
    if request.node.get_closest_marker("redis"):
        require(REDIS, "Redis")
    if request.node.get_closest_marker("worker") and _broker_is_amqp():
        require(RABBITMQ, "RabbitMQ")


def _broker_is_amqp() -> bool:
    from django.conf import settings

    return str(settings.CELERY_BROKER_URL).startswith("amqp")


@pytest.fixture
def counters_redis() -> Iterator[object]:
    """The flushed Redis database where step bodies count themselves, and an empty queue.

    When that database is the broker's own, flushing it empties the queue too; otherwise
    (RabbitMQ, or another Redis database) the broker's queue is purged as well.
    """
    import redis
    from django.conf import settings

    require(REDIS, "Redis")
    client = redis.Redis.from_url(counters_url())
    client.flushdb()
    if counters_url() != settings.CELERY_BROKER_URL:  # RabbitMQ, or another Redis database
        purge_broker_queue()
    yield client
    client.flushdb()


@pytest.fixture
def fanfold_settings(settings: Any) -> Callable[..., None]:
    """Override `FANFOLD_*` settings for one test (before the first execution). runtime.conf
    reads them afresh on Django's setting_changed, which pytest-django sends both ways."""

    def override(**values: Any) -> None:
        settings.FANFOLD = {**getattr(settings, "FANFOLD", {}), **values}

    return override
