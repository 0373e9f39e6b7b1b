"""How many messages wait for this process's workers: a queue's own and those on its variants
of the versions they serve (runtime.core.versions.version_queue). The sweeps give messages
still queued their grace by this count; the plain queue alone misses every pinned run's."""

from __future__ import annotations

from celery import current_app

from runtime import dispatch
from runtime.core.versions import UNPINNED, version_queue
from runtime.registry import versions


def served_queue_depth(queue: str | None = None) -> int | None:
    """Messages waiting in `queue` (None: Celery's default queue) and in its variants of the
    versions this process serves; None if any of them cannot be known."""
    name = queue or current_app.conf.task_default_queue
    total = 0
    for variant in dict.fromkeys(version_queue(name, v) for v in (UNPINNED, *versions.served())):
        depth = dispatch.queue_depth(variant)
        if depth is None:
            return None
        total += depth
    return total
