"""Test-wide setup: service requirements by tier and a clean broker database.

The environment defaults (real Postgres and Redis, short leases) live in config/test_settings.py.
"""

from __future__ import annotations

import pytest

from tests.support.services import POSTGRES, REDIS, require


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = str(item.path)
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


@pytest.fixture
def redis_broker() -> object:
    """A flushed Redis database for the broker of this test."""
    import redis
    from django.conf import settings

    require(REDIS, "Redis")
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.flushdb()
    yield client
    client.flushdb()
