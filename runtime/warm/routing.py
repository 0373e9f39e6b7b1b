"""Resumes routed to the worker node that keeps the run parked.

Each worker node (one `celery worker` process tree) consumes a queue of its own,
`fanfold.warm.<node name>`, beside its usual ones. A suspend that parks its workflow writes
that queue into the run row (`Run.warm_queue`); whoever wakes the run (a message, a signal, an
update, a callback's post, the run's own timer) sends its execution message there instead of to
the run queue, so the resume lands on the node that holds the run warm. Within a prefork node
any child may take it: the warm copy is per child, and the pool hands a task to the child it
picks (a miss replays, as every resume did before).

The fall-back is the run sweep's: a run woken more than FANFOLD_WARM_ROUTE_SECONDS ago and not
yet picked up (its node busy, stopped or gone) is sent to the run queue, where any worker takes
it, and its route is cleared so that its next resumes go there too until it parks again.
FANFOLD_WARM_ROUTE_SECONDS=0 (or the cache off, or the embedded worker) routes nothing.
"""

from __future__ import annotations

from typing import Any

from runtime import conf

QUEUE_PREFIX = "fanfold.warm."

_node_queue = ""  # this process's node queue, set in the worker's main process before forking


def node_queue_name(node: str) -> str:
    """The warm queue of the worker node named `node` (Celery's `-n`, e.g. celery@host)."""
    return f"{QUEUE_PREFIX}{node}"


def routing_on() -> bool:
    settings = conf.get()
    return settings.WARM_ROUTE_SECONDS > 0 and settings.WARM_RUNS > 0


def consume_node_queue(worker: Any) -> str:
    """Make the starting Celery `worker` consume its node's warm queue and remember it for the
    suspends of this process and its children; the queue's name ("" when not routing: the
    setting is off, or the broker is the embedded one)."""
    global _node_queue
    app, node = worker.app, getattr(worker, "hostname", "")
    if not routing_on() or not node or str(app.conf.broker_url or "").startswith("memory://"):
        _node_queue = ""
        return ""
    queues = app.amqp.queues
    queues.select_add(queues[node_queue_name(node)])  # made like any missing queue
    _node_queue = node_queue_name(node)
    return _node_queue


def forget_node_queue() -> None:
    """This process no longer routes resumes to itself (its worker stops)."""
    global _node_queue
    _node_queue = ""


def parked_here() -> str | None:
    """What a suspend that parked its workflow writes as the run's route: this node's queue,
    or None where this process routes nothing."""
    return (_node_queue or None) if routing_on() else None
