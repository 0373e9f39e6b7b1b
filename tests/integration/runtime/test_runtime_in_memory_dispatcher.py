"""runtime.testing's InMemoryDispatcher runs workflows in-process: no broker, no worker."""

from __future__ import annotations

import pytest

from runtime.handles import start
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
