"""Workflows the API tests start (names prefixed "tests.api.")."""

from __future__ import annotations

from typing import Any

from runtime import workflow


def double(n: int) -> int:
    return n * 2


@workflow(name="tests.api.double")
def double_flow(ctx: Any, n: int, *, label: str = "x") -> dict[str, Any]:
    """Doubles n in one step."""
    return {"label": label, "value": ctx.step(double, n)}


def explode() -> None:
    raise ValueError("boom")


@workflow(name="tests.api.broken")
def broken(ctx: Any) -> None:
    ctx.step(explode, retry=None)


@workflow(name="tests.api.sleeper")
def sleeper(ctx: Any, seconds: float = 3600) -> str:
    ctx.step(double, 1)
    ctx.sleep(seconds)
    return "woke"


@workflow(name="tests.api.approval")
def approval(ctx: Any) -> Any:
    cb = ctx.create_callback("approval", timeout=600, heartbeat_timeout=60)
    return {"decision": cb.wait()}


@workflow(name="tests.api.streamer")
def streamer(ctx: Any, count: int, then_sleep: float = 0) -> int:
    from runtime import stream

    for i in range(count):
        stream("numbers").write({"i": i})
    if then_sleep:
        ctx.sleep(then_sleep)
    return count


@workflow(name="tests.api.guarded", start_permission="runtime.view_run")
def guarded(ctx: Any) -> str:
    """Only users with runtime.view_run (besides runtime.add_run) may start it."""
    return "started"


@workflow(name="tests.api.receiver")
def receiver(ctx: Any) -> Any:
    """Waits for one message on "approval", then one signal for its order."""
    message = ctx.recv("approval", timeout=60)
    paid = ctx.wait_for_signal("tests.api.paid", match={"order": "o-1"}, timeout=60)
    return {"message": message, "paid": paid}
