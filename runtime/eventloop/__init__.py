"""The worker's event loop: async step bodies at the speed of asyncio, on any Celery pool.

Low in the import graph on purpose (asyncio, the stdlib and the settings only): the fan-out
side runs its async branch bodies here, and every async body is bounded by `bounded`.

- `worker_loop()` / `WorkerLoop`: one long-lived loop per process on a thread of its own;
  `submit(body, key=, label=, timeout=)` from any thread, at most FANFOLD_ASYNC_CONCURRENCY
  at once, `cancel(key)` for a run's bodies, `close()` at worker shutdown.
- The loop-lag monitor (runtime.eventloop.lag) names a body that blocks the loop.
"""

from __future__ import annotations

from runtime.eventloop.body import BodyTag, bounded
from runtime.eventloop.errors import WorkerLoopClosed
from runtime.eventloop.worker_loop import WorkerLoop, worker_loop

__all__ = [
    "BodyTag",
    "WorkerLoop",
    "WorkerLoopClosed",
    "bounded",
    "worker_loop",
]
