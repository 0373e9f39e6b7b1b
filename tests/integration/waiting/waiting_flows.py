"""Workflows of the waiting tests (names prefixed "tests.waiting."); executions run by hand
with a FakeClock, so every poll and deadline happens exactly when the test says."""

from __future__ import annotations

import uuid
from typing import Any

from runtime import CallbackTimedOut, ConditionTimedOut, StepFailed, step, workflow
from runtime.models import Event, Run
from runtime.services import start_run
from tests.support.driven_by_hand import T0 as T0  # the tests' clock starts here

POLLS: dict[str, int] = {}  # polls per key, in this process


@step(name="tests.waiting.ready_after")
def ready_after(key: str, polls: int) -> dict[str, int] | None:
    POLLS[key] = POLLS.get(key, 0) + 1
    return {"polls": POLLS[key]} if POLLS[key] >= polls else None


def broken(key: str) -> bool:
    POLLS[key] = POLLS.get(key, 0) + 1
    raise RuntimeError("the check itself failed")


@workflow(name="tests.waiting.until_ready")
def until_ready(ctx: Any, key: str, polls: int, interval: float = 10.0) -> Any:
    return ctx.wait_for_condition(ready_after, key, polls, interval=interval)


@workflow(name="tests.waiting.backoff")
def backoff(ctx: Any, key: str) -> Any:
    return ctx.wait_for_condition(ready_after, key, 6, interval=1, backoff=2, max_interval=3)


@workflow(name="tests.waiting.deadline")
def deadline(ctx: Any, key: str) -> Any:
    try:
        return ctx.wait_for_condition(ready_after, key, 100, interval=10, timeout=25)
    except ConditionTimedOut as exc:
        return {"timed_out": str(exc)}


@workflow(name="tests.waiting.broken")
def broken_check(ctx: Any, key: str) -> Any:
    try:
        return ctx.wait_for_condition(broken, key, interval=1)
    except StepFailed as exc:
        return {"failed": exc.error_type}


@workflow(name="tests.waiting.callback_during_sleep")
def callback_during_sleep(ctx: Any, timeout: float, sleep: float) -> Any:
    cb = ctx.create_callback("answer", timeout=timeout)
    ctx.sleep(sleep)
    try:
        return {"answer": cb.wait()}
    except CallbackTimedOut:
        return {"timed_out": True}


def start(name: str, *args: Any) -> uuid.UUID:
    run, _ = start_run(name, list(args))
    return run.id


def event_types(run_id: uuid.UUID) -> list[str]:
    return list(Event.objects.filter(run_id=run_id).order_by("seq").values_list("type", flat=True))


def run_row(run_id: uuid.UUID) -> Run:
    return Run.objects.get(id=run_id)


@workflow(name="tests.waiting.heartbeat_during_sleep")
def heartbeat_during_sleep(ctx: Any) -> Any:
    cb = ctx.create_callback("job", timeout=60, heartbeat_timeout=1)
    ctx.sleep(5)
    try:
        return {"answer": cb.wait()}
    except CallbackTimedOut:
        return {"timed_out": True}
