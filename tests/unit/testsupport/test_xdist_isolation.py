"""Each pytest-xdist worker's own Redis database and RabbitMQ vhost (tests/support)."""

from __future__ import annotations

import pytest

from tests.support.xdist_isolation import isolate_xdist_worker


def test_outside_xdist_the_environment_is_left_alone() -> None:
    environ = {"CELERY_BROKER_URL": "redis://127.0.0.1:6379/8"}
    isolate_xdist_worker(environ)
    assert environ == {"CELERY_BROKER_URL": "redis://127.0.0.1:6379/8"}


def test_a_worker_takes_its_redis_database_for_broker_counters_and_publisher() -> None:
    environ = {
        "PYTEST_XDIST_WORKER": "gw1",
        "TEST_XDIST_REDIS_DBS": "12,13",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/14?socket_timeout=5",
        "TEST_COUNTERS_REDIS_URL": "redis://127.0.0.1:6379/11",
    }
    isolate_xdist_worker(environ)
    assert environ["CELERY_BROKER_URL"] == "redis://127.0.0.1:6379/13?socket_timeout=5"
    assert environ["TEST_COUNTERS_REDIS_URL"] == "redis://127.0.0.1:6379/13"
    assert environ["FANFOLD_TEST_REDIS_URL"] == "redis://127.0.0.1:6379/13"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("amqp://guest:guest@h:5672/fanfold_test", "amqp://guest:guest@h:5672/fanfold_test_gw0"),
        ("amqp://guest:guest@h:5672//", "amqp://guest:guest@h:5672/fanfold_test_gw0"),
    ],
)
def test_a_worker_takes_its_rabbitmq_vhost_once(url: str, expected: str) -> None:
    environ = {"PYTEST_XDIST_WORKER": "gw0", "TEST_XDIST_REDIS_DBS": "9", "CELERY_BROKER_URL": url}
    isolate_xdist_worker(environ)
    isolate_xdist_worker(environ)  # a worker process the test starts imports the settings again
    assert environ["CELERY_BROKER_URL"] == expected


def test_a_worker_without_a_redis_database_is_refused_by_name() -> None:
    environ = {"PYTEST_XDIST_WORKER": "gw2", "TEST_XDIST_REDIS_DBS": "12,13"}
    with pytest.raises(RuntimeError, match="gw2 has no Redis database of its own"):
        isolate_xdist_worker(environ)
