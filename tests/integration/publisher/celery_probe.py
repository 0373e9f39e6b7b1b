"""A tiny Celery app for the worker test: ``celery -A celery_probe worker`` runs it unmodified.

Its one task appends what it received to a Redis list the test reads.
"""

from __future__ import annotations

import json
import os
from typing import Any

import redis
from celery import Celery, Task

BROKER_URL = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/15")
QUEUE = "publisher-probe"
SEEN_KEY = "publisher-probe:seen"
TASK = "probe.record"

app = Celery("probe", broker=BROKER_URL, set_as_current=False)
app.conf.update(
    task_serializer="json",
    accept_content=["json"],
    task_ignore_result=True,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)


@app.task(name=TASK, bind=True)
def record(self: Task, *args: Any, **kwargs: Any) -> None:
    seen = {
        "id": self.request.id,
        "key": getattr(self.request, "fanfold_idempotency_key", None),
        "args": list(args),
        "kwargs": kwargs,
    }
    with redis.Redis.from_url(self.app.conf.broker_url) as client:
        client.rpush(SEEN_KEY, json.dumps(seen))
