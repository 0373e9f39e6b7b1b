"""The worker's event loop: async step bodies at the speed of asyncio, on any Celery pool.

Low in the import graph on purpose (asyncio, the stdlib and the settings only): both the
fan-out side (branch bodies) and the workflow side (inline steps) call it.

- `worker_loop()` / `WorkerLoop`: one long-lived loop per process on a thread of its own;
  `submit(body, key=, label=, timeout=)` from any thread, at most FANFOLD_ASYNC_CONCURRENCY
  at once, `cancel(key)` for a run's bodies, `close()` at worker shutdown.
- `run_to_completion(coro)`: a coroutine run to its end from sync code, on a private loop.
- The loop-lag monitor (runtime.eventloop.lag) names a body that blocks the loop.
"""

from __future__ import annotations

from runtime.eventloop.body import BodyTag, bounded
from runtime.eventloop.completion import run_to_completion
from runtime.eventloop.errors import InsideEventLoop, WorkerLoopClosed
from runtime.eventloop.worker_loop import WorkerLoop, worker_loop

__all__ = [
    "BodyTag",
    "InsideEventLoop",
    "WorkerLoop",
    "WorkerLoopClosed",
    "bounded",
    "run_to_completion",
    "worker_loop",
]
