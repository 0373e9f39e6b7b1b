"""Fixtures for the publisher's integration tests: a real Redis broker on a dedicated db.

Without Redis the tests skip, except on CI (``CI=true``), where a missing service is a failure.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from celery import Celery
from pipeline_spy import PipelineSpy
from redis.client import Pipeline

from publisher.metrics import counters

REDIS_URL = os.environ.get("FANFOLD_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


@pytest.fixture(autouse=True)
def fresh_counters() -> Iterator[None]:
    counters.reset()
    yield
    counters.reset()


@pytest.fixture
def redis_url() -> Iterator[str]:
    """The broker URL, on a flushed database; skips (or fails on CI) without Redis."""
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1)
    try:
        client.ping()
    except redis.RedisError as exc:
        client.close()
        reason = f"Redis is not reachable at {REDIS_URL}: {exc}"
        if os.environ.get("CI", "").strip().lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    client.flushdb()
    yield REDIS_URL
    client.flushdb()
    client.close()


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    with redis.Redis.from_url(redis_url) as client:
        yield client


@pytest.fixture
def broker_env(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Point ``CELERY_BROKER_URL`` at the test database.

    Celery lets that variable override an app's own ``broker`` argument, and the suite-wide
    conftest sets it to another database.
    """
    monkeypatch.setenv("CELERY_BROKER_URL", redis_url)
    return redis_url


@pytest.fixture
def app(broker_env: str) -> Iterator[Celery]:
    app = Celery("publisher-it", broker=broker_env, set_as_current=False)
    app.conf.update(task_serializer="json", accept_content=["json"])
    yield app
    app.close()


@pytest.fixture
def pipelines(monkeypatch: pytest.MonkeyPatch) -> PipelineSpy:
    spy = PipelineSpy()
    execute: Callable[..., list[Any]] = Pipeline.execute

    def spying_execute(self: Pipeline, *args: Any, **kwargs: Any) -> list[Any]:
        commands = [str(command[0][0]).upper() for command in self.command_stack]
        if "LPUSH" in commands and len(spy.publishes) in spy.fail_publish:
            spy.fail_publish.discard(len(spy.publishes))
            raise redis.ConnectionError("connection lost (injected by the test)")
        spy.executed.append(commands)
        return execute(self, *args, **kwargs)

    monkeypatch.setattr(Pipeline, "execute", spying_execute)
    return spy
