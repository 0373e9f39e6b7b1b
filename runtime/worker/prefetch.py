"""What the runtime changes in the Celery worker it runs in, and why.

Celery (5.3 and later) lowers a worker's prefetch count after a broker connection is lost while
tasks run, then raises it one step per acknowledged task
(`worker_enable_prefetch_count_reduction`, on by default). Each raise is a synchronous
`basic.qos` round trip on the consumer's connection, chained to the task's acknowledgement and
so made in the thread that finished the task (the ack itself is handed to the consumer's loop).
Under the prefork and solo pools that is the consumer's own thread. Under the threads pool it is
a pool thread: two or more threads then send `basic.qos` and read the same py-amqp connection,
which is not thread-safe. gevent and eventlet run it in the task's greenlet; not tried here,
they are treated alike. Seen after a RabbitMQ restart under a fan-out (threads pool): the
consumer's loop and two pool threads all blocked in `recv()` waiting for a `basic.qos-ok` that
another of them had read, the acks of finished tasks queued behind the blocked loop, and the
broker holding the prefetched messages unacknowledged: the worker received nothing more, once
for over three minutes until it was stopped, once for 60 s until the broker's next heartbeat
frame was misread (`UnexpectedFrame`) and the consumer reconnected. With the reduction off, the
prefetch count stays as configured across a reconnect; the cost is at most one prefetch window
of extra messages reserved while the tasks from before the reconnect finish.
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
