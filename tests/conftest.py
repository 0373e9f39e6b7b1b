"""Test-wide setup: real Postgres and Redis, short leases, a clean broker database.

`scripts/test` exports the same defaults; they are repeated here so a bare `pytest` works.
"""

from __future__ import annotations

import os

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/fanfold")
os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/14")
os.environ.setdefault("FANFOLD_LEASE_SECONDS", "2")
os.environ.setdefault("FANFOLD_SWEEP_INTERVAL", "0.5")

import pytest  # noqa: E402

from tests.support.services import POSTGRES, REDIS, require  # noqa: E402


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
