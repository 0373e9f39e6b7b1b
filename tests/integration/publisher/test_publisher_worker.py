"""An unmodified ``celery worker`` consumes what CeleryTransport publishes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import celery_probe
import pytest
import redis

from publisher.celery_transport import CeleryTransport
from publisher.core import publish_messages
from publisher.messages import Message, Routing
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.redis, pytest.mark.worker]

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
CELERY = Path(sys.executable).with_name("celery")


@pytest.fixture
def worker(broker_env: str, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A ``celery worker`` process serving the probe queue; terminated after the test."""
    log_path = tmp_path / "worker.log"
    env = {
        **os.environ,
        "CELERY_BROKER_URL": broker_env,
        "PYTHONPATH": os.pathsep.join([str(HERE), str(REPO)]),
    }
    command = [
        str(CELERY), "-A", "celery_probe", "worker",
        "-P", "solo", "-c", "1", "-Q", celery_probe.QUEUE,
        "--without-mingle", "--without-gossip", "--without-heartbeat",
        "--loglevel", "INFO",
    ]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=HERE, env=env, stdout=log, stderr=log)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        if process.returncode not in (0, -15):
            print(log_path.read_text(errors="replace"))


def wait_for(client: redis.Redis, count: int, worker: subprocess.Popen[bytes]) -> list[str]:
    def seen() -> bool:
        if worker.poll() is not None:
            pytest.fail(f"the celery worker exited early with code {worker.returncode}")
        return client.llen(celery_probe.SEEN_KEY) >= count

    wait_until(seen, 60, interval=0.1, message=f"the worker to process {count} messages")
    return [raw.decode() for raw in client.lrange(celery_probe.SEEN_KEY, 0, -1)]


def test_celery_worker_consumes_messages_from_celery_transport(
    broker_env: str, redis_client: redis.Redis, worker: subprocess.Popen[bytes]
) -> None:
    probe_app = celery_probe.app
    probe_app.conf.broker_url = broker_env
    messages = [
        Message(
            celery_probe.TASK,
            f"run-7:step-{i}:1",
            args=[i, f"item-{i}"],
            kwargs={"n": i},
            routing=Routing(queue=celery_probe.QUEUE),
        )
        for i in range(20)
    ]

    publish_messages(messages, CeleryTransport(probe_app))

    seen = [json.loads(raw) for raw in wait_for(redis_client, 20, worker)]
    keys = [m.idempotency_key for m in messages]
    assert [s["id"] for s in seen] == keys
    assert [s["key"] for s in seen] == keys
    assert [s["args"] for s in seen] == [[i, f"item-{i}"] for i in range(20)]
    assert [s["kwargs"] for s in seen] == [{"n": i} for i in range(20)]
