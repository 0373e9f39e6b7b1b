"""`run_to_completion`: a coroutine run to its end from sync code (a sync workflow's async step).

It runs on a private loop in the calling thread (`asyncio.Runner`), not on the worker loop:

- No deadlock by construction. The worker loop has bounded slots; a sync thread that waits for
  one may itself be what a running body waits on (an async workflow's sync step runs in a
  thread, and may call an async helper), and with every slot held so, nothing would move.
  A private loop waits for nothing shared.
- Nobody else is blocked. On the shared loop a body that blocks stalls up to
  ASYNC_CONCURRENCY others; on its own loop it stalls only its caller, as a sync step would.
- The caller's signals still reach it: on the prefork pool's main thread a soft time limit
  raises out of the loop, and closing the runner cancels the coroutine (it sees
  `asyncio.CancelledError`) instead of leaving it running on another thread.
- Context variables: the coroutine runs in a copy of the caller's context, so
  `current_step()` answers inside it, and what it sets does not leak back.

The cost, a new loop per call (tens of microseconds), is small next to a step's checkpoint.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine
from typing import Any, TypeVar

from runtime.eventloop.body import bounded
from runtime.eventloop.errors import InsideEventLoop

T = TypeVar("T")


def run_to_completion(
    coro: Coroutine[Any, Any, T], *, timeout: float | None = None, label: str = "coroutine"
) -> T:
    """Run `coro` to its end on a private event loop in this thread and return its result
    (or raise its exception). `timeout` bounds it as `WorkerLoop.submit` does (StepTimedOut
    naming `label`). Refused with InsideEventLoop in a thread that runs an event loop (a
    coroutine there must be awaited); `coro` is then closed, never run."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        coro.close()
        raise InsideEventLoop(
            f"run_to_completion({label}) was called inside a running event loop, which it "
            "would block; await the coroutine instead"
        )
    with asyncio.Runner() as runner:
        return runner.run(bounded(coro, timeout, label), context=contextvars.copy_context())
