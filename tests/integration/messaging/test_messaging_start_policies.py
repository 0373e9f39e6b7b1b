"""Start policies on PostgreSQL: debounce with the last arguments, and each on_limit."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import messaging_flows  # noqa: F401  (registers the workflows)

from runtime import send, start
from runtime.handles import RunHandle, astart
from runtime.models import Event, Run
from runtime.testing import InMemoryDispatcher


def test_messaging_debounce_coalesces_into_one_run_with_the_last_arguments(
    runs: InMemoryDispatcher,
) -> None:
    handles = [start("tests.msg.echo", n, debounce=timedelta(seconds=0.3),
                     debounce_key="user-1") for n in range(3)]  # fmt: skip
    assert len({h.id for h in handles}) == 1
    runs.join()
    assert handles[0].wait(timeout=5) == 2
    later = start("tests.msg.echo", 9, debounce=0.1, debounce_key="user-1")
    assert later.id != handles[0].id  # the first batch began: a new one opens
    runs.join()
    assert later.wait(timeout=5) == 9


def test_messaging_on_limit_skip_cancels_the_new_start(runs: InMemoryDispatcher) -> None:
    first = start("tests.msg.single_skip", "a")
    runs.join()
    second = start("tests.msg.single_skip", "b")
    assert second.status == "cancelled"
    cancelled = Event.objects.get(run_id=second.id, type="run_cancelled")
    assert cancelled.payload["reason"] == "skipped"
    send(first.id, "go", 1)
    runs.join()
    assert first.wait(timeout=5) == "a"


def test_messaging_on_limit_cancel_running_takes_their_place(runs: InMemoryDispatcher) -> None:
    first = start("tests.msg.single_replace", "a")
    runs.join()
    second = start("tests.msg.single_replace", "b")
    assert first.status == "cancelled"
    runs.join()
    send(second.id, "go", 1)
    runs.join()
    assert second.wait(timeout=5) == "b"


def test_messaging_on_limit_queue_waits_its_turn(runs: InMemoryDispatcher) -> None:
    first = start("tests.msg.single_queue", "a")
    runs.join()
    second = start("tests.msg.single_queue", "b")
    assert Run.objects.get(id=second.id).admitted is False
    send(first.id, "go", 1)
    runs.join()
    send(second.id, "go", 1)
    runs.join()
    assert (first.wait(timeout=5), second.wait(timeout=5)) == ("a", "b")


def test_messaging_astart_debounces_as_start_does(runs: InMemoryDispatcher) -> None:
    async def caller() -> list[RunHandle]:
        window = timedelta(seconds=0.2)
        return [await astart("tests.msg.echo", n, debounce=window, debounce_key="async-1")
                for n in range(3)]  # fmt: skip

    handles = asyncio.run(caller())
    assert len({h.id for h in handles}) == 1
    runs.join()
    assert handles[0].wait(timeout=5) == 2
