"""Admission under `concurrency=N`: slots, priority then FIFO order, freeing, keys, races."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runtime import start
from runtime.core.errors import InvalidArguments
from runtime.flow.admission import admit, admit_waiting
from runtime.models import Run
from runtime.store.flow.admission import slots_in_use
from runtime.testing import InMemoryDispatcher
from tests.integration.flow import flow_workflows as flows


def admitted_labels() -> list[str]:
    rows = Run.objects.filter(workflow=flows.limited.name, admitted=True)
    return sorted(r.input["args"][0] for r in rows)


def test_admission_admits_only_free_slots_and_keeps_the_rest_pending(
    dispatcher: InMemoryDispatcher,
) -> None:
    handles = [start(flows.limited, f"r{i}") for i in range(5)]
    assert admitted_labels() == ["r0", "r1"]
    assert [h.status for h in handles] == ["pending"] * 5
    assert {r.run_id for r in dispatcher.runs} == {handles[0].id, handles[1].id}
    assert slots_in_use() == {(flows.limited.name, ""): 2}


def test_admission_finishing_runs_admit_the_next_until_all_complete(
    dispatcher: InMemoryDispatcher,
) -> None:
    flows.calls.clear()
    handles = [start(flows.limited, f"r{i}") for i in range(5)]
    dispatcher.join()
    assert [h.wait(timeout=5) for h in handles] == [f"r{i}" for i in range(5)]
    expected = [f"r{i}" for i in range(5)]
    assert flows.calls == expected  # FIFO at equal priority
    assert slots_in_use() == {}


def test_admission_orders_by_priority_then_fifo(dispatcher: InMemoryDispatcher) -> None:
    flows.calls.clear()
    start(flows.limited, "first")
    start(flows.limited, "second")  # both slots taken
    for label, priority in [("p0", 0), ("p5a", 5), ("p9", 9), ("p5b", 5), ("p1", 1)]:
        start(flows.limited, label, priority=priority)
    dispatcher.join()
    # The in-memory dispatcher delivers by priority too, so "second" (admitted at once, at
    # priority 0) may run after some of them: the order of admission is that of the p-runs.
    admitted = [label for label in flows.calls if label.startswith("p")]
    assert admitted == ["p9", "p5a", "p5b", "p1", "p0"]


def test_admission_counts_each_concurrency_key_apart(dispatcher: InMemoryDispatcher) -> None:
    for key in ("a", "a", "a", "b", "b", "b"):
        start(flows.limited, key, concurrency_key=key)
    assert admitted_labels() == ["a", "a", "b", "b"]
    assert slots_in_use() == {(flows.limited.name, "a"): 2, (flows.limited.name, "b"): 2}


def test_admission_cancelling_a_run_frees_its_slot(dispatcher: InMemoryDispatcher) -> None:
    first, _second, third = (start(flows.limited, f"r{i}") for i in range(3))
    assert Run.objects.get(id=third.id).admitted is False
    first.cancel()
    assert Run.objects.get(id=third.id).admitted is True


def test_admission_rejects_bad_priorities_and_keys_without_a_limit() -> None:
    with pytest.raises(InvalidArguments, match="priority"):
        start(flows.limited, "x", priority=10)
    with pytest.raises(InvalidArguments, match="no concurrency limit"):
        start(flows.paced_twice, concurrency_key="k")
    assert not Run.objects.exists()


def test_admission_racing_admitters_never_exceed_the_limit(
    dispatcher: InMemoryDispatcher,
) -> None:
    # Runs created unadmitted while slots are taken, then many admitters at once.
    blockers = [start(flows.limited, f"b{i}") for i in range(2)]
    waiting = [start(flows.limited, f"w{i}") for i in range(10)]
    Run.objects.filter(id__in=[b.id for b in blockers]).update(status="completed")
    barrier = threading.Barrier(6)

    def admitter() -> None:
        try:
            barrier.wait()
            admit(flows.limited.name, "")
        finally:
            connection.close()

    threads = [threading.Thread(target=admitter) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert Run.objects.filter(id__in=[w.id for w in waiting], admitted=True).count() == 2


def test_admission_a_plain_run_pays_no_flow_control_query(dispatcher: InMemoryDispatcher) -> None:
    with CaptureQueriesContext(connection) as captured:
        handle = start(flows.plain, "x")
        dispatcher.join()
    assert handle.wait(timeout=5) == "x"
    statements = [q["sql"] for q in captured.captured_queries]
    flow_tables = ("concurrencyslot", "ratebucket", "ratereservation", "schedule")
    assert not [s for s in statements if any(t in s for t in flow_tables)]
    assert not [s for s in statements if "concurrency_key" in s and "INSERT" not in s]


def test_admission_runs_of_a_workflow_that_lost_its_limit_are_let_go(
    dispatcher: InMemoryDispatcher,
) -> None:
    handle = start(flows.plain, "was-limited")
    Run.objects.filter(id=handle.id).update(admitted=False, concurrency_key="")
    assert admit_waiting() == 1
    assert Run.objects.get(id=handle.id).admitted is True
    assert [r.run_id for r in dispatcher.runs].count(handle.id) == 2  # at start, and now
