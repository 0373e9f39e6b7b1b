"""Payloads at rest with a real worker: with FANFOLD_PAYLOAD_KEYS set, a secret carried by a
run's input, a step's result, a stream chunk and a callback's payload is found nowhere in
PostgreSQL (every column of every table, as text) nor in the Redis broker (every command it
was sent during the run, message bodies decoded, and every key and value left)."""

from __future__ import annotations

import base64
import binascii
import re
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.conf import settings
from django.db import connection

import tests.acceptance.lifecycle_flows as flows
from runtime import start
from runtime.core.payload_keys import generate_key
from runtime.models import Step, StreamChunk
from runtime.services import post_callback
from runtime.testing import callback_token
from tests.support.waiting import wait_until
from tests.support.workers import running_worker

# It reads the Redis broker (MONITOR and its keys): the RabbitMQ pass leaves it out.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.worker,
    pytest.mark.redis_transport,
]

KEY = generate_key()
_BASE64 = re.compile(rb"[A-Za-z0-9+/=_-]{16,}")


def _mentions(data: bytes, secret: bytes) -> bool:
    """Whether `data` holds the secret, as it is or inside a base64 run (a kombu body)."""
    if secret in data:
        return True
    for run in _BASE64.findall(data):
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                if secret in decode(run + b"=" * (-len(run) % 4)):
                    return True
            except (binascii.Error, ValueError):
                continue
    return False


class BrokerMonitor(threading.Thread):
    """Every command the broker's Redis database receives, as MONITOR reports it."""

    def __init__(self, client: redis.Redis) -> None:
        super().__init__(daemon=True)
        self.client = client
        self.db = int(client.connection_pool.connection_kwargs.get("db", 0))
        self.commands: list[bytes] = []
        self.done = threading.Event()

    def run(self) -> None:
        with self.client.monitor() as monitor:
            for seen in monitor.listen():
                if self.done.is_set():
                    return
                if int(seen.get("db", -1)) == self.db:
                    self.commands.append(str(seen.get("command", "")).encode())

    def stop(self) -> None:
        self.done.set()
        self.client.ping()  # a command of its own wakes the listener up
        self.join(timeout=10)


def _database_rows_with(secret: str) -> dict[str, int]:
    """Rows of every table of the test database whose text holds the secret."""
    found: dict[str, int] = {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
        )
        tables = [row[0] for row in cursor.fetchall()]
        for table in tables:
            sql = f'SELECT count(*) FROM "{table}" t WHERE t::text LIKE %s'
            cursor.execute(sql, [f"%{secret}%"])
            (n,) = cursor.fetchone() or (0,)
            if n:
                found[table] = n
    return found


def _broker_values(client: Any) -> Iterator[bytes]:
    """Every key of the broker's database, and every value it holds."""
    for key in client.scan_iter(count=500):
        kind = client.type(key)
        values: list[Any] = [key]
        if kind == b"string":
            values.append(client.get(key))
        elif kind == b"list":
            values += client.lrange(key, 0, -1)
        elif kind == b"hash":
            values += [f + b" " + v for f, v in client.hgetall(key).items()]
        elif kind in (b"set", b"zset"):
            values += client.smembers(key) if kind == b"set" else client.zrange(key, 0, -1)
        yield from (v if isinstance(v, bytes) else str(v).encode() for v in values)


def test_lifecycle_at_rest_secret_in_no_table_and_not_in_the_broker(
    counters_redis: Any, fanfold_settings: Any
) -> None:
    secret = f"sekrit-{uuid.uuid4().hex}"
    fanfold_settings(PAYLOAD_KEYS=[KEY])
    # No read timeout: MONITOR is quiet while the worker starts, longer than redis-py's default
    # 5 s on a loaded machine, and a timeout ended the listener before the broker's commands.
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=None)
    monitor = BrokerMonitor(broker)
    monitor.start()
    try:
        env = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE, "FANFOLD_PAYLOAD_KEYS": KEY}
        with running_worker("at-rest", "prefork", 2, **env):
            run = start(flows.secretive, secret)
            wait_until(
                lambda: Step.objects.filter(run_id=run.id, kind="callback").exists(),
                60,
                message="cb",
            )
            token = callback_token(run.id)  # rows keep the token's digest only
            assert token
            post_callback(token, result={"note": f"answer-{secret}"})
            result = run.wait(timeout=60)
    finally:
        monitor.stop()

    # What the runtime reads back is the clear value...
    assert result == {
        "revealed": {"result": f"result-{secret}"},
        "answer": {"note": f"answer-{secret}"},
        "final": f"final-{secret}",
    }
    assert [c.value for c in StreamChunk.objects.filter(run_id=run.id)] == [
        {"chunk": f"chunk-{secret}"}
    ]
    # ...and what is stored and carried holds none of it.
    assert _database_rows_with(secret) == {}
    assert monitor.commands, "the broker's commands were not seen"
    assert [c[:200] for c in monitor.commands if _mentions(c, secret.encode())] == []
    assert [v[:200] for v in _broker_values(broker) if _mentions(v, secret.encode())] == []
