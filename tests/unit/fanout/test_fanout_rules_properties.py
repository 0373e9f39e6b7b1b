"""Property tests of fan-in: random rules, windows and completion orders.

The simulation plays the database's part: each completion increments the counters and asks
`after_batch`, exactly as runtime.store.fanout.branch_reports does inside the completion's
transaction.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from runtime.core.fanin import (
    FAILED,
    SUCCEEDED,
    FanInRule,
    GroupCounts,
    after_batch,
    after_finish,
    initial_release,
)
from runtime.core.settle import BranchState, Failure, settle


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[FanInRule, int | None, list[bool]]:
    total = draw(st.integers(min_value=1, max_value=30))
    outcomes = draw(st.lists(st.booleans(), min_size=total, max_size=total))
    min_successful = draw(st.none() | st.integers(min_value=0, max_value=total))
    tolerated = draw(st.none() | st.integers(min_value=0, max_value=total))
    rule = FanInRule.resolve(
        total,
        min_successful=min_successful,
        tolerated_failures=tolerated,
        return_exceptions=draw(st.booleans()),
    )
    window = draw(st.none() | st.integers(min_value=1, max_value=total + 2))
    return rule, window, outcomes


@given(scenario=scenarios(), data=st.data())
def test_fanin_settles_exactly_once_in_any_completion_order(
    scenario: tuple[FanInRule, int | None, list[bool]], data: st.DataObject
) -> None:
    rule, window, outcomes = scenario
    total = rule.total
    released = initial_release(total, window)
    in_flight = list(range(released))
    status = ["pending"] * total
    succeeded = failed = 0
    verdicts: list[str] = []
    order: list[int] = []
    while in_flight and not verdicts:
        pick = in_flight.pop(data.draw(st.integers(0, len(in_flight) - 1)))
        ok = outcomes[pick]
        status[pick] = "completed" if ok else "failed"
        order.append(pick)
        succeeded, failed = succeeded + ok, failed + (not ok)
        step = after_finish(rule, GroupCounts(total, released, succeeded, failed), 1)
        if step.verdict is not None:
            verdicts.append(step.verdict)
            assert step.release == range(0)  # nothing leaves after the decision
            continue
        assert step.release.start == released
        released = step.release.stop
        in_flight.extend(step.release)
        assert len(in_flight) <= (window or total)
    assert len(verdicts) == 1  # every fan-out is decided, once
    # The decision came at the first prefix of the completion order that decides the rule.
    s = f = 0
    for n, index in enumerate(order, 1):
        s, f = s + outcomes[index], f + (not outcomes[index])
        assert (rule.verdict(s, f) is not None) == (n == len(order))
    status = [st_ if st_ != "pending" else "cancelled" for st_ in status]
    branches = [
        BranchState(10 + i, f"b{i}", status[i], result=i, error={"type": "E"}) for i in range(total)
    ]
    first_failure = next((10 + i for i in order if not outcomes[i]), None)
    settled = settle(rule, branches, first_failure)
    assert settled is not None and settled.verdict == verdicts[0]
    for i, value in enumerate(settled.values):
        if status[i] == "completed":
            assert value == i  # signature order
        else:
            assert isinstance(value, Failure) and value.position == 10 + i
    if verdicts[0] == FAILED:
        assert settled.first_failure is not None
        assert settled.first_failure.position == first_failure
    else:
        assert verdicts[0] == SUCCEEDED


@given(
    scenario=scenarios(),
    before=st.tuples(st.integers(0, 30), st.integers(0, 30)),
    kinds=st.lists(st.sampled_from(["completed", "failed", "retrying"]), max_size=40),
)
def test_fanin_after_batch_equals_reports_applied_one_by_one(
    scenario: tuple[FanInRule, int | None, list[bool]],
    before: tuple[int, int],
    kinds: list[str],
) -> None:
    rule, window, _ = scenario
    total = rule.total
    succeeded, failed = min(before[0], total), min(before[1], total - min(before[0], total))
    if rule.verdict(succeeded, failed) is not None:
        return  # a settled group takes no reports
    released = initial_release(total, window)
    start = GroupCounts(total, released, succeeded, failed)
    batch = after_batch(rule, start, kinds)

    accepted, verdict, window_end = 0, None, released
    for kind in kinds:
        accepted += 1
        if kind == "retrying":
            continue
        succeeded, failed = succeeded + (kind == "completed"), failed + (kind == "failed")
        step = after_finish(rule, GroupCounts(total, window_end, succeeded, failed), 1)
        if step.verdict is not None:
            verdict = step.verdict
            break
        window_end = max(window_end, step.release.stop) if step.release else window_end
    assert (batch.accepted, batch.verdict) == (accepted, verdict)
    assert (batch.counts.succeeded, batch.counts.failed) == (succeeded, failed)
    assert batch.release == (range(0) if verdict else range(released, window_end))
