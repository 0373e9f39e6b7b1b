"""Updates from Python on PostgreSQL: validators, replies and rejections, timeouts and late
reads, repeated ids, runs that end unanswered, update-with-start under a race, async."""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any

import pytest
from django.db import connections
from update_flows import CALLS
from update_pump import Pump

from runtime import (
    PayloadError,
    RunCancelled,
    RunFailed,
    RunFinished,
    RunNotFound,
    UnknownUpdate,
    UpdateNotFound,
    UpdateRejected,
    conf,
    get_run,
    get_update,
    start,
    start_with_update,
    workflow,
)
from runtime.core.errors import PayloadTooLarge
from runtime.models import Event, RunUpdate
from runtime.testing import InMemoryDispatcher


def _events(run_id: uuid.UUID, kind: str) -> list[dict[str, Any]]:
    rows = Event.objects.filter(run_id=run_id, type=kind).order_by("seq")
    return [e.payload for e in rows]


def test_updates_validator_refusal_records_nothing(runs: InMemoryDispatcher) -> None:
    run = start("tests.upd.cart", "c-0")
    runs.join()
    events = Event.objects.filter(run_id=run.id).count()
    with pytest.raises(UpdateRejected, match="needs a sku"):
        get_run(run.id).update("add_item", {"qty": 1})  # ValueError in the validator
    with pytest.raises(UpdateRejected, match="not sold") as refused:
        get_run(run.id).update("add_item", {"sku": "BANNED"})  # UpdateRejected in it
    assert refused.value.code == "update_rejected"
    assert not RunUpdate.objects.filter(run_id=run.id).exists()
    assert Event.objects.filter(run_id=run.id).count() == events
    assert runs.runs[-1].run_id == run.id and len(runs.runs) == 1  # not even woken


def test_updates_reply_and_reject_are_recorded(pump: Pump) -> None:
    run = start("tests.upd.cart", "c-1")
    handle = get_run(run.id)
    assert handle.update("add_item", {"sku": "A1"}, timeout=10) == {"count": 1, "cost": 200}
    with pytest.raises(UpdateRejected, match="at most 10"):
        handle.update("add_item", {"sku": "B2", "qty": 11}, timeout=10)
    assert handle.update("add_item", {"sku": "C33"}, timeout=10) == {"count": 2, "cost": 300}
    assert handle.update("checkout", None, timeout=10) == {"items": [{"sku": "A1"}, {"sku": "C33"}]}
    assert run.wait(timeout=10) == [{"sku": "A1"}, {"sku": "C33"}]
    received = _events(run.id, "update_received")
    replied = _events(run.id, "update_replied")
    assert [e["name"] for e in received] == ["add_item", "add_item", "add_item", "checkout"]
    assert [e["status"] for e in replied] == ["replied", "rejected", "replied", "replied"]
    assert replied[1]["reason"] == "at most 10 of an item"
    assert [e["update_id"] for e in received] == [e["update_id"] for e in replied]
    statuses = list(RunUpdate.objects.filter(run_id=run.id).values_list("status", flat=True))
    assert statuses == ["replied", "rejected", "replied", "replied"]
    assert CALLS["A1"] == 1  # replays did not run the step again


def test_updates_timeout_leaves_it_accepted_and_readable_later(runs: InMemoryDispatcher) -> None:
    run = start("tests.upd.cart", "c-2")
    runs.join()
    with pytest.raises(TimeoutError, match="get_update"):
        get_run(run.id).update("add_item", {"sku": "Z"}, update_id="late-1", timeout=0.2)
    pending = get_update(run.id, "late-1")
    assert (pending.id, pending.name, pending.status) == ("late-1", "add_item", "pending")
    assert pending.payload == {"sku": "Z"} and pending.reply is None
    runs.join()
    done = get_update(run.id, "late-1", wait=5)
    assert (done.status, done.reply, done.reason) == ("replied", {"count": 1, "cost": 100}, None)
    with pytest.raises(UpdateNotFound):
        get_update(run.id, "never-sent")
    with pytest.raises(RunNotFound):
        get_update(uuid.uuid4(), "late-1")


def test_updates_same_update_id_applies_once(pump: Pump) -> None:
    run = start("tests.upd.cart", "c-3")
    handle = get_run(run.id)
    first = handle.update("add_item", {"sku": "A1"}, update_id="once", timeout=10)
    again = handle.update("add_item", {"sku": "OTHER"}, update_id="once", timeout=10)
    assert first == again == {"count": 1, "cost": 200}
    assert RunUpdate.objects.filter(run_id=run.id).count() == 1
    assert handle.update("checkout", None, timeout=10) == {"items": [{"sku": "A1"}]}
    run.wait(timeout=10)
    # Once the run finished, the repeated id still answers with the first reply.
    assert handle.update("add_item", {"sku": "A1"}, update_id="once") == first


def test_updates_refuse_undeclared_finished_unknown_and_oversized(
    pump: Pump, settings: Any
) -> None:
    run = start("tests.upd.cart", "c-4")
    with pytest.raises(UnknownUpdate) as unknown:
        get_run(run.id).update("remove_item", {"sku": "A1"})
    assert unknown.value.code == "unknown_update"
    with pytest.raises(UnknownUpdate):
        get_run(start("tests.upd.plain").id).update("add_item", {"sku": "A1"})
    with pytest.raises(PayloadTooLarge):
        get_run(run.id).update("add_item", {"sku": "x" * (2 * 1024 * 1024)})
    with pytest.raises(PayloadError):
        get_run(run.id).update("add_item", {"sku": object()})
    with pytest.raises(RunNotFound):
        get_run(uuid.uuid4())
    get_run(run.id).update("checkout", None, timeout=10)
    run.wait(timeout=10)
    with pytest.raises(RunFinished) as finished:
        get_run(run.id).update("add_item", {"sku": "A1"})
    assert finished.value.code == "run_finished"
    assert RunUpdate.objects.filter(run_id=run.id).count() == 1


def test_updates_run_ending_unanswered_raises_its_end(pump: Pump) -> None:
    failing = start("tests.upd.silent", True)
    with pytest.raises(RunFailed, match="gave up"):
        get_run(failing.id).update("poke", 1, timeout=10)
    quiet = start("tests.upd.silent")
    with pytest.raises(RunFinished, match="without answering"):
        get_run(quiet.id).update("poke", 1, timeout=10)
    cancelled = start("tests.upd.cart", "c-5")
    cancelled.wait  # noqa: B018 - a handle exists before the cancel
    result: list[BaseException] = []

    def ask() -> None:
        try:
            get_run(cancelled.id).update("checkout", None, update_id="held", timeout=10)
        except BaseException as exc:
            result.append(exc)

    pump.stop()  # nobody runs it now: the update waits until the cancel ends the run
    asker = threading.Thread(target=ask)
    asker.start()
    while not RunUpdate.objects.filter(run_id=cancelled.id).exists():
        threading.Event().wait(0.01)
    cancelled.cancel()
    asker.join(timeout=10)
    assert [type(e) for e in result] == [RunCancelled]


def test_updates_start_with_update_racing_callers_share_one_run(pump: Pump) -> None:
    replies: list[Any] = []
    handles: list[Any] = []
    lock = threading.Lock()
    barrier = threading.Barrier(10)

    failures: list[BaseException] = []

    def caller(i: int) -> None:
        barrier.wait()
        try:
            handle, reply = start_with_update(
                "tests.upd.cart", "c-race", idempotency_key="cart-c-race",
                update=("add_item", {"sku": f"S{i}"}), timeout=20,
            )  # fmt: skip
        except BaseException as exc:
            failures.append(exc)
            raise
        finally:
            connections.close_all()
        with lock:
            replies.append(reply)
            handles.append(handle)

    callers = [threading.Thread(target=caller, args=(i,)) for i in range(10)]
    for t in callers:
        t.start()
    for t in callers:
        t.join(timeout=30)
    assert failures == []
    assert len({h.id for h in handles}) == 1
    assert sum(h.created for h in handles) == 1
    run_id = handles[0].id
    # Each reply counts the items so far: replies follow the arrival (commit) order.
    arrived = list(RunUpdate.objects.filter(run_id=run_id).order_by("id"))
    assert len(arrived) == 10
    by_sku = {r["count"] for r in replies}
    assert by_sku == set(range(1, 11))
    assert [u.reply["count"] for u in arrived] == list(range(1, 11))
    final = get_run(run_id).update("checkout", None, timeout=10)
    assert [i["sku"] for i in final["items"]] == [u.payload["sku"] for u in arrived]


def test_updates_start_with_update_refused_starts_nothing(runs: InMemoryDispatcher) -> None:
    with pytest.raises(UpdateRejected):
        start_with_update("tests.upd.cart", "c-x", idempotency_key="k-x", update=("add_item", {}))
    with pytest.raises(UnknownUpdate):
        start_with_update("tests.upd.cart", "c-x", idempotency_key="k-x", update=("nope", {}))
    assert runs.runs == []


def test_updates_async_workflow_and_async_caller(pump: Pump) -> None:
    run = start("tests.upd.cart_async", "c-a")
    handle = get_run(run.id)

    async def talk() -> list[Any]:
        first = await handle.aupdate("add_item", {"sku": "A"}, timeout=10)
        second = await handle.aupdate("add_item", {"sku": "B"}, timeout=10)
        done = await handle.aupdate("checkout", None, timeout=10)
        return [first, second, done]

    got = asyncio.run(talk())
    assert got == [{"count": 1}, {"count": 2}, {"items": [{"sku": "A"}, {"sku": "B"}]}]
    assert run.wait(timeout=10) == [{"sku": "A"}, {"sku": "B"}]
    assert len(_events(run.id, "update_replied")) == 3


def test_updates_linger_takes_the_next_update_without_suspending(pump: Pump, settings: Any) -> None:
    settings.FANFOLD = {**settings.FANFOLD, "UPDATE_LINGER": 2.0}
    conf.reset()
    try:
        run = start("tests.upd.cart", "c-linger")
        handle = get_run(run.id)
        for n in range(1, 4):
            assert handle.update("add_item", {"sku": "A1"}, timeout=10)["count"] == n
        handle.update("checkout", None, timeout=10)
        run.wait(timeout=10)
    finally:
        conf.reset()
    # Each next_update after the first found its update while the run kept its worker.
    assert len(_events(run.id, "wait_created")) <= 1
    assert len(_events(run.id, "update_replied")) == 4


def test_updates_declarations_are_checked() -> None:
    with pytest.raises(TypeError, match="callable or None"):
        workflow(name="tests.upd.bad_validator", updates={"x": "not callable"})(lambda ctx: 1)
    with pytest.raises(TypeError, match="dict of update name"):
        workflow(name="tests.upd.bad_updates", updates=["x"])(lambda ctx: 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="update name"):
        workflow(name="tests.upd.bad_name", updates={"": None})(lambda ctx: 1)
