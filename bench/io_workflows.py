"""`bench fanout --io-ms`'s workflows and baseline task: branches that wait on I/O.

Not a `workflows.py`: only that benchmark loads it (its workers through
FANFOLD_WORKFLOW_MODULES), so that the other scenarios measure workers as they were. The wait
stands for an HTTP call or an LLM request: `asyncio.sleep` in the async step, `time.sleep`
in the sync one (the thread is held, as a blocking client would hold it), a gevent-patched
`time.sleep` in Celery's own task on the gevent pool.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from celery import shared_task

from bench import counting
from runtime import step, workflow


@step(name="bench.io.wait_async")
async def wait_async(i: int, io_ms: float) -> int:
    await asyncio.sleep(io_ms / 1000)
    return i


@step(name="bench.io.wait_sync")
def wait_sync(i: int, io_ms: float) -> int:
    time.sleep(io_ms / 1000)
    return i


@workflow(name="bench.io.fanout_async")
def fanout_async(ctx: Any, n: int, io_ms: float) -> int:
    """`n` async branches that each await `io_ms`."""
    return len(ctx.all([wait_async.s(i, io_ms) for i in range(n)]))


@workflow(name="bench.io.fanout_sync")
def fanout_sync(ctx: Any, n: int, io_ms: float) -> int:
    """`n` sync branches that each sleep `io_ms`."""
    return len(ctx.all([wait_sync.s(i, io_ms) for i in range(n)]))


@shared_task(name="fanfold.bench_io_wait_counted", ignore_result=True)
def io_wait_counted(i: int, io_ms: float, key: str, total: int) -> None:
    """The Celery baseline's task: the same wait, no result backend, completions counted."""
    time.sleep(io_ms / 1000)
    counting.completed(key, total)
