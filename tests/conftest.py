"""Test-wide setup: service requirements by tier and a clean broker database.

The environment defaults (real Postgres and Redis, short leases) live in config/test_settings.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.replica import require_replica
from tests.support.services import (
    POSTGRES,
    RABBITMQ,
    REDIS,
    counters_url,
    purge_broker_queue,
    require,
)

# The files whose tests time what they see or measure the machine (benches, flow control's
# admission, schedule ticks and rate-limit turns, memory at rest, load): scripts/test runs them
# in one process after the parallel passes, with the browser tests.
SERIAL_FILES = frozenset(
    {
        "test_bench_command.py",
        "test_bench_flow.py",
        "test_bench_soak.py",
        "test_flow_concurrency.py",
        "test_flow_rate_limit.py",
        "test_flow_schedule_workers.py",
        "test_flow_priority_order.py",
        "test_web_streams_load.py",
        "test_lifecycle_at_rest.py",
        "test_worker_gc.py",
        "test_worker_time_limits.py",
        "test_fanout_backlog.py",
        "test_observe_metrics.py",
        # The read replica tests: some delay and stop the one replica the others read.
        "test_api_read_replica.py",
        "test_replica_checks.py",
        "test_multi_host_database.py",
    }
)
# The soak: minutes of steady load on a worker of its own, asserting on no time or figure's size
# (its verdict is the bench's own). It keeps to the serial tests' rule (nothing of the parallel
# passes beside it), but times nothing the other serial tests see: scripts/test runs it in the
# background beside the RabbitMQ pass, on a Redis database of its own.
SOAK_FILES = frozenset({"test_bench_soak.py"})
# The files whose behaviour is the broker's: priorities, queues, redelivery after a killed
# worker, takeover, waiting, the publisher against a worker, the Tasks backend's queues and
# crashes. scripts/test runs them again on RabbitMQ (every worker test runs on Redis).
BROKER_FILES = frozenset(
    {
        "test_flow_priority_order.py",
        "test_run_queue_layout.py",
        "test_worker_recovery.py",
        "test_worker_takeover.py",
        "test_worker_time_limits.py",
        "test_fanout_sigkill.py",
        "test_waiting.py",
        "test_publisher_worker.py",
        "test_tasks_workers.py",
        "test_deploy_versions.py",
        "test_deploy_versions_workers.py",
        "test_warm_routing_workers.py",
    }
)


def pytest_configure(config: pytest.Config) -> None:
    from tests.support.flush import flush_by_delete

    flush_by_delete()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = str(item.path)
        if item.path.name in SERIAL_FILES or item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.serial)
        if item.path.name in SOAK_FILES:
            item.add_marker(pytest.mark.soak)
        if item.path.name in BROKER_FILES:
            item.add_marker(pytest.mark.broker)
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
    if request.node.get_closest_marker("replica"):
        require_replica()


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
