"""The version queues a worker consumes: for each queue it was started on (`-Q`, else the
default queue), that queue's variant for each version it serves (runtime.versions.served),
added when the worker starts, so that no `-Q` has to name them.

A worker keeps its plain queues too: messages of runs older than versions, and of processes
older than them, still arrive there (a pinned run's message that reaches the wrong worker
claims nothing: runtime.store.runs.run_statements.claimable_condition).
"""

from __future__ import annotations

from typing import Any

from runtime.core.versions import is_version_queue, version_queue
from runtime.registry import versions


def consume_version_queues(app: Any) -> list[str]:
    """Make `app`'s worker consume the version queues of the queues it consumes; their names."""
    queues = app.amqp.queues
    plain = [name for name in list(queues.consume_from) if not is_version_queue(name)]
    added = []
    for name in plain:
        for version in versions.served():
            queue = queues[version_queue(name, version)]  # made like any missing queue
            queues.select_add(queue)
            added.append(queue.name)
    return added
