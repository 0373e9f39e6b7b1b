"""What the runtime changes in the Celery worker it runs in, and why.

Celery (5.3 and later) lowers a worker's prefetch count after a broker connection is lost while
tasks run, then raises it one step per acknowledged task
(`worker_enable_prefetch_count_reduction`, on by default). The raise is a synchronous `basic.qos`
round trip on the consumer's connection, made in whichever thread acknowledges the task. Under the
prefork and solo pools that is the consumer's own thread. Under the threads pool (and gevent,
eventlet) it is the pool's thread: two or more threads then send `basic.qos` and read the same
py-amqp connection, which is not thread-safe. Seen after a RabbitMQ restart under a fan-out: the
consumer's loop and two pool threads all blocked in `recv()` waiting for a `basic.qos-ok` that
another of them had read, the acks of finished tasks queued behind the blocked loop, the broker
held the prefetched messages unacknowledged, and the worker received nothing more until a
heartbeat frame of the broker (every 60 s under Celery's 120 s heartbeat) broke the connection, or
for ever without one. With the reduction off, the prefetch count stays as configured across a
reconnect; the cost is at most one prefetch window of extra messages reserved while the tasks from
before the reconnect finish.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("fanfold.worker")

# Pools whose task callbacks (and so Celery's acknowledgements) run on the consumer's thread.
CONSUMER_THREAD_POOLS = frozenset({"prefork", "solo"})


def pool_kind(pool: object) -> str:
    """The pool's short name from its module (`celery.concurrency.thread` -> "thread")."""
    return type(pool).__module__.rsplit(".", 1)[-1]


def make_reconnect_safe(app: Any, pool: object) -> bool:
    """Turn Celery's prefetch reduction after a reconnect off under a pool that acknowledges
    tasks off the consumer's thread; returns whether it changed the setting."""
    kind = pool_kind(pool)
    if kind in CONSUMER_THREAD_POOLS or not app.conf.worker_enable_prefetch_count_reduction:
        return False
    app.conf.worker_enable_prefetch_count_reduction = False
    log.info(
        "the %s pool acknowledges tasks off the consumer's thread: Celery's prefetch reduction "
        "after a broker reconnect is turned off (its basic.qos calls from pool threads "
        "deadlock the consumer's connection)",
        kind,
    )
    return True
