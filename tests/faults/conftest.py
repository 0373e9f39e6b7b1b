"""The fault suite: services restarted and workers killed under running workflows.

scripts/test runs it as its own pass, on a PostgreSQL cluster (port 5433) and a Redis (6380)
of its own (scripts/fault-services), so that restarting them touches nothing else; RabbitMQ is
restarted with `rabbitmqctl stop_app` / `start_app`. `FAULT_PG_CLUSTER` ("VERSION NAME") and
`FAULT_REDIS_PORT` name what may be restarted; without them the suite cannot run.
`FAULT_PGBOUNCER` ("PORT POSTGRES_PORT") names the PgBouncer (scripts/pgbouncer) the suite's
DATABASE_URL goes through, when it does: its restart case runs only then. The failover test
(test_fault_failover.py) runs in a session of its own on a primary/standby pair of its own
(scripts/pg-failover), which `FAULT_FAILOVER_PORTS` names instead.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from kombu import Connection
from kombu.exceptions import ChannelError

from tests.support.database import _release_test_database
from tests.support.services import RABBITMQ, reachable, require
from tests.support.waiting import wait_until

__all__ = ["_release_test_database"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "/faults/" in str(item.path):
            item.add_marker(pytest.mark.fault)
            item.add_marker(pytest.mark.worker)
            item.add_marker(pytest.mark.django_db(transaction=True))


@pytest.fixture(autouse=True)
def _configured(request: pytest.FixtureRequest) -> None:
    # The failover test runs on a primary/standby pair of its own, in a session of its own.
    needed = ("FAULT_FAILOVER_PORTS",) if "failover" in request.path.name else (
        "FAULT_PG_CLUSTER", "FAULT_REDIS_PORT")  # fmt: skip
    if not all(os.environ.get(name) for name in needed):
        message = "the fault suite runs on its own services: scripts/test sets them up"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


def _wait_port(port: int, timeout: float = 60.0) -> None:
    back = f"port {port} to come back"
    wait_until(lambda: reachable(("127.0.0.1", port), timeout=0.2), timeout, message=back)


def _postgres_port() -> int:
    """The suite's cluster's port: behind the suite's PgBouncer, the one it forwards to."""
    named = os.environ.get("FAULT_PGBOUNCER", "").split()
    return int(named[1]) if len(named) == 2 else 5433


@pytest.fixture
def restart_postgres() -> Callable[[], None]:
    def restart() -> None:
        version, name = os.environ["FAULT_PG_CLUSTER"].split()
        subprocess.run(
            ["pg_ctlcluster", "--skip-systemctl-redirect", version, name, "restart", "-m", "fast"],
            check=True,
        )
        _wait_port(_postgres_port())
        connection.close()  # this process's connection died with the server

    return restart


@pytest.fixture
def restart_pgbouncer() -> Callable[[], None]:
    """Restart the suite's PgBouncer: every client and server connection through it is cut."""
    named = os.environ.get("FAULT_PGBOUNCER", "").split()
    if len(named) != 2:
        pytest.skip("the suite's DATABASE_URL goes through no PgBouncer (FAULT_PGBOUNCER)")
    port, upstream = named
    script = str(Path(__file__).resolve().parents[2] / "scripts" / "pgbouncer")

    def restart() -> None:
        subprocess.run([script, "restart", port, upstream], check=True)
        _wait_port(int(port))
        connection.close()  # this process's connection died with it

    return restart


@pytest.fixture
def restart_redis() -> Callable[[], None]:
    def restart() -> None:
        port = os.environ["FAULT_REDIS_PORT"]
        subprocess.run(["redis-cli", "-p", port, "shutdown", "nosave"], check=False)
        subprocess.run(
            ["redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "--port", port,
             "--save", "", "--appendonly", "no", "--dir", "/var/lib/redis-faults",
             "--logfile", "/var/log/redis/faults.log"],
            check=True,
        )  # fmt: skip
        _wait_port(int(port))

    return restart


# scripts/fault-services makes the vhost; FAULT_AMQP_BROKER_URL names another.
AMQP_URL = os.environ.get(
    "FAULT_AMQP_BROKER_URL", "amqp://guest:guest@127.0.0.1:5672/fanfold_faults"
)


@pytest.fixture
def amqp_url() -> str:
    """The suite's own vhost on the machine's shared RabbitMQ, its default queue emptied: a run
    stalled in an earlier session must not leave this one a backlog."""
    require(RABBITMQ, "RabbitMQ")
    # A ChannelError: no such queue yet, so nothing waits in it.
    with Connection(AMQP_URL, connect_timeout=5) as broker, suppress(ChannelError):
        broker.default_channel.queue_purge(settings.CELERY_TASK_DEFAULT_QUEUE)
    return AMQP_URL


@pytest.fixture
def restart_rabbitmq() -> Callable[[], None]:
    def restart() -> None:
        subprocess.run(["rabbitmqctl", "stop_app"], check=True, capture_output=True)
        subprocess.run(["rabbitmqctl", "start_app"], check=True, capture_output=True)
        _wait_port(5672)

    return restart
