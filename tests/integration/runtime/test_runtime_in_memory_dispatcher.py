"""runtime.testing's InMemoryDispatcher runs workflows in-process: no broker, no worker."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from runtime.handles import aget_run, astart, start
from runtime.models import Run, RunStatus
from runtime.testing import InMemoryDispatcher, use_dispatcher


def test_in_memory_dispatcher_join_runs_steps_fan_outs_and_sleeps_to_the_end() -> None:
    with use_dispatcher(InMemoryDispatcher()) as dispatcher:
        assert isinstance(dispatcher, InMemoryDispatcher)
        fan = start("examples.sum_of_squares", 5)
        nap = start("examples.nap", 0.2)
        delivered = dispatcher.join(timeout=30)
    assert Run.objects.get(id=fan.id).result == sum(n * n for n in range(1, 6))
    assert Run.objects.get(id=nap.id).status == RunStatus.COMPLETED
    # Two starts, the five branches (one chunk), the fan-in's and the nap's resumes at least.
    assert delivered >= 2 + 1 + 2
    assert [sent.dispatch.count for sent in dispatcher.branches] == [5]
    assert any(sent.countdown for sent in dispatcher.runs)  # the sleep's timer was delayed


def test_in_memory_dispatcher_join_times_out_with_messages_left() -> None:
    with use_dispatcher(InMemoryDispatcher()) as dispatcher:
        assert isinstance(dispatcher, InMemoryDispatcher)
        start("examples.nap", 30.0)
        with pytest.raises(TimeoutError):
            dispatcher.join(timeout=0.5)


def test_in_memory_dispatcher_async_callers_start_wait_and_cancel() -> None:
    with use_dispatcher(InMemoryDispatcher()) as dispatcher:
        assert isinstance(dispatcher, InMemoryDispatcher)

        async def caller() -> tuple[Any, Any, Any]:
            fan = await astart("examples.sum_of_squares", 4)
            nap = await astart("examples.nap", 30.0)
            found = await aget_run(nap.id)
            await found.acancel()
            delivering = threading.Thread(target=dispatcher.join, kwargs={"timeout": 30})
            delivering.start()
            result = await fan.aresult(timeout=30)
            delivering.join()
            return result, found, await aget_run(fan.id)

        result, nap, fan = asyncio.run(caller())
    assert result == sum(n * n for n in range(1, 5))
    assert (nap.status, fan.status) == (RunStatus.CANCELLED, RunStatus.COMPLETED)
