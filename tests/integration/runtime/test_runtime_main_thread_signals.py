"""A signal whose handler raises, landing while the main thread commits a step itself (as a
prefork child's soft time limit can): the commit is whole, the exception comes after it."""

from __future__ import annotations

import signal
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence

import pytest
from conftest import RecordingSink
from run_records import event_types, step_at

from runtime import step, workflow
from runtime.checkpoint.batching import Checkpoint
from runtime.executor import Execution
from runtime.models import Run
from runtime.services import start_run
from runtime.testing import use_writer


class SoftTimeLimit(Exception):
    pass


@step(name="tests.signals.noop")
def noop(i: int) -> int:
    return i


@workflow(name="tests.signals.three_steps")
def three_steps(ctx: object) -> int:
    return sum(ctx.step(noop, i) for i in range(3))  # type: ignore[attr-defined]


class SignalledSink(RecordingSink):
    """Raises SIGALRM at the start of its third commit and notes what the handler had done
    by the end of it."""

    handled: list[int] = []
    seen_at_commit_end: list[list[int]] = []
    written_on: list[str] = []

    def write_batch(self, checkpoints: Sequence[Checkpoint]) -> None:
        SignalledSink.written_on.append(threading.current_thread().name)
        if len(self.committed) == 2:
            signal.raise_signal(signal.SIGALRM)
        super().write_batch(checkpoints)
        SignalledSink.seen_at_commit_end.append(list(SignalledSink.handled))


@pytest.fixture
def soft_time_limit() -> Iterator[list[int]]:
    def handler(signum: int, frame: object) -> None:
        SignalledSink.handled.append(signum)
        raise SoftTimeLimit

    SignalledSink.handled = []
    SignalledSink.seen_at_commit_end = []
    SignalledSink.written_on = []
    previous = signal.signal(signal.SIGALRM, handler)
    try:
        with use_writer(SignalledSink):
            yield SignalledSink.handled
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_the_commit_a_signal_lands_in_is_whole_and_the_exception_comes_after_it(
    soft_time_limit: list[int], run_now: Callable[[uuid.UUID], Execution]
) -> None:
    run, _ = start_run("tests.signals.three_steps", [])

    run_now(run.id)

    assert SignalledSink.written_on[:3] == [threading.main_thread().name] * 3
    assert SignalledSink.seen_at_commit_end[2] == []  # the handler waited for the commit
    assert soft_time_limit == [signal.SIGALRM]
    # The commit the signal landed in recorded the last step whole ...
    assert step_at(run.id, 2).status == "completed"
    assert event_types(run.id).count("step_completed") == 3
    # ... and the exception reached the workflow after it, as one landing in its own code
    # would: the run failed with it.
    failed = Run.objects.get(id=run.id)
    assert failed.status == "failed" and failed.error["type"] == "SoftTimeLimit"
