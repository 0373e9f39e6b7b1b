"""Warm resumes (runtime.warm): a run resumed from its parked workflow ends with the same
history and result as one whose every resume replays, and stays correct when it is cancelled,
forked, or run by another worker while it is parked; the cache keeps to its bounds."""

from __future__ import annotations

import random
import threading
import uuid
from typing import Any

import pytest
from prometheus_client import REGISTRY
from warm_flows import STARTS, UNWOUND

from runtime import fork, get_run, send, start
from runtime.executor import ExecutionOutcome, execute
from runtime.models import Event, Run, Step
from runtime.testing import InMemoryDispatcher
from runtime.warm.cache import warm_runs
from runtime.worker.run_batch import execute_batch

OPS = ("step", "sleep", "recv", "patched", "value", "map", "now")


def _program(seed: int) -> list[list[Any]]:
    """A random workflow of 4-12 calls, at least one of them a wait for a message."""
    rng = random.Random(seed)
    ops: list[list[Any]] = []
    for i in range(rng.randint(4, 12)):
        op = rng.choice(OPS)
        arg: Any = {"step": i, "sleep": 0.01, "recv": f"t{i % 2}", "patched": f"p{i}",
                    "value": i, "map": i, "now": 0}[op]  # fmt: skip
        ops.append([op, arg])
    return [*ops, ["recv", "last"]]


def _drive(runs: InMemoryDispatcher, ops: list[list[Any]]) -> uuid.UUID:
    """Start the program and feed its waits one message at a time, each after it waits."""
    run_id = start("tests.warm.program", ops).id
    for op, arg in ops:
        runs.join()
        if op == "recv":
            send(run_id, arg, f"m-{arg}")
    runs.join()
    return run_id


def _history(run_id: uuid.UUID) -> tuple[list[Any], list[Any], Any]:
    steps = Step.objects.filter(run_id=run_id).order_by("position")
    rows = [(s.position, s.name, s.kind, s.status, s.attempt, s.result) for s in steps]
    kinds = [e.type for e in Event.objects.filter(run_id=run_id).order_by("seq")]
    run = Run.objects.get(id=run_id)
    return rows, kinds, (run.status, run.result)


def _now_free(rows: list[Any]) -> list[Any]:
    """`ctx.now()` records the time it was asked: equal histories differ only there."""
    return [row[:5] if row[1] == "ctx.now" else row for row in rows]


@pytest.mark.parametrize("seed", range(6))
def test_warm_and_cold_resumes_record_the_same_history_and_result(
    runs: InMemoryDispatcher, settings: Any, seed: int
) -> None:
    ops = _program(seed)
    warm_id = _drive(runs, ops)
    settings.FANFOLD = {**settings.FANFOLD, "WARM_RUNS": 0}
    cold_id = _drive(runs, ops)
    warm, cold = _history(warm_id), _history(cold_id)
    assert warm[2][0] == "completed"
    assert (_now_free(warm[0]), warm[1]) == (_now_free(cold[0]), cold[1])
    if not any(op == "now" for op, _ in ops):
        assert warm[2] == cold[2]
    waits = sum(1 for op, _ in ops if op in ("recv", "sleep", "map"))
    assert STARTS[str(warm_id)] == 1  # every resume went on from the parked workflow
    assert STARTS[str(cold_id)] == 1 + waits  # every resume replayed from the start


def test_warm_run_resumed_by_another_worker_meanwhile_goes_on_from_its_record(
    runs: InMemoryDispatcher,
) -> None:
    """Takeover: another thread (another worker, its own cache) takes a resume of the run this
    thread holds parked; this thread's next resume catches up from the records it made."""
    ops = [["recv", "a"], ["step", 1], ["recv", "b"], ["step", 2], ["recv", "c"]]
    run_id = start("tests.warm.program", ops).id
    runs.join()
    assert run_id in warm_runs()
    send(run_id, "a", "A")
    elsewhere = threading.Thread(target=execute, args=(run_id,))
    elsewhere.start()
    elsewhere.join()
    assert Run.objects.get(id=run_id).status == "waiting"
    runs.runs.clear()
    send(run_id, "b", "B")
    send(run_id, "c", "C")
    assert execute(run_id).outcome is ExecutionOutcome.COMPLETED
    assert get_run(run_id).wait(timeout=5) == ["A", 2, "B", 4, "C"]
    assert STARTS[str(run_id)] == 2  # here once, and once in the other thread


def test_warm_run_cancelled_while_parked_is_dropped_and_unwound(runs: InMemoryDispatcher) -> None:
    run_id = start("tests.warm.program", [["recv", "a"]]).id
    runs.join()
    assert run_id in warm_runs()
    get_run(run_id).cancel()
    runs.join()
    assert execute(run_id).outcome is ExecutionOutcome.SKIPPED
    assert run_id not in warm_runs()
    assert UNWOUND[str(run_id)] == 1  # the parked frames were unwound, writing nothing
    assert Run.objects.get(id=run_id).status == "cancelled"


def test_warm_run_forked_while_parked_both_go_on_apart(runs: InMemoryDispatcher) -> None:
    ops = [["step", 1], ["recv", "a"], ["step", 2], ["recv", "b"]]
    run_id = start("tests.warm.program", ops).id
    runs.join()
    send(run_id, "a", "A")
    runs.join()
    child = fork(run_id, from_position=3)  # from the second step: it runs it again
    runs.join()
    send(child.id, "b", "child")
    send(run_id, "b", "parent")
    runs.join()
    assert get_run(run_id).wait(timeout=5) == [2, "A", 4, "parent"]
    assert child.wait(timeout=5) == [2, "A", 4, "child"]
    assert STARTS[str(run_id)] == 1


def test_async_workflows_are_not_parked_and_resume_by_replay(runs: InMemoryDispatcher) -> None:
    run_id = start("tests.warm.program_async", ["a", "b"]).id
    runs.join()
    assert run_id not in warm_runs()
    send(run_id, "a", 1)
    runs.join()
    send(run_id, "b", 2)
    runs.join()
    assert get_run(run_id).wait(timeout=5) == [1, 2]
    assert STARTS[str(run_id)] == 3


def test_the_cache_drops_its_oldest_run_past_its_size(
    runs: InMemoryDispatcher, settings: Any
) -> None:
    settings.FANFOLD = {**settings.FANFOLD, "WARM_RUNS": 2}
    ids = []
    for _ in range(3):
        ids.append(start("tests.warm.program", [["recv", "a"]]).id)
        runs.join()
    assert [run_id in warm_runs() for run_id in ids] == [False, True, True]
    assert UNWOUND[str(ids[0])] == 1
    for run_id in ids:
        send(run_id, "a", "x")
    runs.join()
    assert [get_run(run_id).wait(timeout=5) for run_id in ids] == [["x"]] * 3
    assert [STARTS[str(run_id)] for run_id in ids] == [2, 1, 1]


def test_the_cache_drops_runs_parked_longer_than_its_age_bound(
    runs: InMemoryDispatcher, settings: Any
) -> None:
    settings.FANFOLD = {**settings.FANFOLD, "WARM_RUN_SECONDS": 0.05}
    run_id = start("tests.warm.program", [["recv", "a"]]).id
    runs.join()
    threading.Event().wait(0.1)
    send(run_id, "a", "x")
    runs.join()
    assert get_run(run_id).wait(timeout=5) == ["x"]
    assert STARTS[str(run_id)] == 2


def test_resumes_are_counted_by_how_they_went_on(runs: InMemoryDispatcher, settings: Any) -> None:
    def counted(how: str) -> float:
        labels = {"workflow": "tests.warm.program", "how": how}
        return REGISTRY.get_sample_value("fanfold_resumes_total", labels) or 0.0

    before = counted("warm"), counted("replay")
    _drive(runs, [["recv", "a"], ["recv", "b"]])
    settings.FANFOLD = {**settings.FANFOLD, "WARM_RUNS": 0}
    _drive(runs, [["recv", "a"]])
    assert (counted("warm") - before[0], counted("replay") - before[1]) == (2, 1)


def test_a_wake_up_that_races_the_suspend_goes_on_from_the_parked_workflow(
    runs: InMemoryDispatcher,
) -> None:
    run_id = start("tests.warm.raced").id
    runs.join()
    wakes = Event.objects.filter(run_id=run_id, type="wait_created").count()
    assert (Run.objects.get(id=run_id).status, wakes) == ("waiting", 1)
    assert Run.objects.get(id=run_id).wakeups >= 1  # the step's send woke the run mid-pass
    send(run_id, "b", "B")
    runs.join()
    assert get_run(run_id).wait(timeout=5) == "B"
    assert STARTS[str(run_id)] == 1


def test_a_batch_of_wakes_resumes_the_runs_parked_here_warm(runs: InMemoryDispatcher) -> None:
    """Wakes leave the publisher combined (`fanfold.execute_runs`): the batch claims the runs
    this thread keeps parked at their turn, with the history's tail, instead of with their
    whole history, which would drop their warm copies."""
    ids = [start("tests.warm.program", [["recv", "a"]]).id for _ in range(3)]
    runs.join()
    cold = start("tests.warm.program", [["recv", "a"]]).id
    runs.join()
    warm_runs().discard(cold)
    runs.runs.clear()
    for run_id in [*ids, cold]:
        send(run_id, "a", "x")
    assert execute_batch([*ids, cold]) == "completed:4"
    assert [STARTS[str(run_id)] for run_id in [*ids, cold]] == [1, 1, 1, 2]
