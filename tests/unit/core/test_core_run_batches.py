"""The start messages a publisher holds, combined: by routing and priority, at most MAX_RUNS
runs a message, each run once and in order, other messages untouched."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from publisher.messages import Message, Routing
from runtime.core.run_batches import combine_starts

SINGLE, BATCH = "fanfold.execute_run", "fanfold.execute_runs"


def _start(n: int, queue: str | None = None, priority: int = 0) -> Message:
    kwargs = {"priority": priority} if priority else {}
    return Message(SINGLE, f"r{n}:start", [f"r{n}"], kwargs, routing=Routing(queue=queue))


def test_run_batches_starts_of_one_routing_become_one_message() -> None:
    combined = combine_starts([_start(1), _start(2), _start(3)], SINGLE, BATCH)
    assert [(m.task, m.args, m.idempotency_key) for m in combined] == [
        (BATCH, [["r1", "r2", "r3"]], "r1:start:n3")
    ]


def test_run_batches_a_lone_start_stays_as_it_was() -> None:
    alone = _start(1)
    assert combine_starts([alone], SINGLE, BATCH) == [alone]


def test_run_batches_queues_and_priorities_are_never_mixed() -> None:
    held = [_start(1), _start(2, "reports"), _start(3), _start(4, priority=7), _start(5, "reports")]
    other = Message("fanfold.run_branch", "b1", ["x", 1, 1, 0])
    combined = combine_starts([*held, other], SINGLE, BATCH)
    assert combined[0] == other
    assert [(m.args, m.kwargs, m.routing.queue) for m in combined[1:]] == [
        ([["r1", "r3"]], {}, None),
        ([["r2", "r5"]], {}, "reports"),
        (["r4"], {"priority": 7}, None),
    ]


@given(
    st.lists(st.tuples(st.sampled_from([None, "q"]), st.sampled_from([0, 3])), max_size=60),
    st.integers(min_value=1, max_value=25),
)
def test_run_batches_every_run_once_in_order_within_the_bound(
    shapes: list[tuple[str | None, int]], max_runs: int
) -> None:
    held = [_start(n, queue, priority) for n, (queue, priority) in enumerate(shapes)]
    combined = combine_starts(held, SINGLE, BATCH, max_runs)
    by_group: dict[tuple[str | None, int], list[str]] = {}
    for m in combined:
        runs = m.args[0] if m.task == BATCH else m.args
        assert 1 <= len(runs) <= max_runs and (m.task == BATCH) == (len(runs) > 1)
        by_group.setdefault((m.routing.queue, m.kwargs.get("priority", 0)), []).extend(runs)
    expected: dict[tuple[str | None, int], list[str]] = {}
    for n, shape in enumerate(shapes):
        expected.setdefault(shape, []).append(f"r{n}")
    assert by_group == expected
