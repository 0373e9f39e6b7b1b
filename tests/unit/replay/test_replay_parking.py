"""Parking (runtime.durable.parking): a waiting call switches out with its Suspend, is made
again from its position when resumed, sees the executor's context of the new pass, and a
dropped workflow unwinds; outside a parking greenlet the Suspend is raised as before."""

from __future__ import annotations

import contextvars
from typing import Any

import pytest

from runtime.core.control import Suspend
from runtime.durable.parking import Parked, ParkedWorkflow, WarmRunDropped, parks

PASS: contextvars.ContextVar[str] = contextvars.ContextVar("test_pass", default="none")
OWN: contextvars.ContextVar[str] = contextvars.ContextVar("test_own", default="none")


class _Cursor:
    def __init__(self) -> None:
        self.position = 0
        self.fatal: BaseException | None = None

    def rewind(self, position: int) -> None:
        self.position = position

    def fail(self, exc: BaseException) -> None:
        self.fatal = exc


class _Ctx:
    """A context whose `wait` takes a position and suspends until `ready` holds it."""

    def __init__(self) -> None:
        self.cursor: Any = _Cursor()
        self.ready: set[int] = set()
        self.calls: list[int] = []

    @parks
    def wait(self) -> str:
        if self.cursor.fatal is not None:
            raise self.cursor.fatal
        self.cursor.position += 1
        self.calls.append(self.cursor.position)
        if self.cursor.position not in self.ready:
            raise Suspend(None)
        return f"{self.cursor.position}:{PASS.get()}:{OWN.get()}"


def _workflow(ctx: _Ctx, log: list[str]) -> list[str]:
    OWN.set("workflow's")
    try:
        return [ctx.wait(), ctx.wait()]
    except BaseException as exc:
        log.append(type(exc).__name__)
        raise


def test_a_parked_wait_is_made_again_from_its_position_in_the_new_pass() -> None:
    ctx, log = _Ctx(), []
    parked = ParkedWorkflow(ctx.cursor, lambda: _workflow(ctx, log))
    PASS.set("first")
    assert isinstance(parked.switch(), Parked)
    ctx.ready.add(1)
    PASS.set("second")
    assert isinstance(parked.switch(), Parked)  # on to the second wait
    ctx.ready.add(2)
    PASS.set("third")
    assert parked.switch() == ["1:second:workflow's", "2:third:workflow's"]
    assert ctx.calls == [1, 1, 2, 2]  # each wait made again at its own position, none before
    assert not parked.parked and log == []


def test_a_dropped_workflow_unwinds_and_can_record_nothing() -> None:
    ctx, log = _Ctx(), []
    parked = ParkedWorkflow(ctx.cursor, lambda: _workflow(ctx, log))
    assert isinstance(parked.switch(), Parked)
    parked.drop()
    assert log == ["WarmRunDropped"]
    assert isinstance(ctx.cursor.fatal, WarmRunDropped)
    assert not parked.parked


def test_outside_a_parking_greenlet_the_suspend_is_raised() -> None:
    ctx = _Ctx()
    with pytest.raises(Suspend):
        ctx.wait()
