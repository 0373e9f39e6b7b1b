"""Workflows the test kit's own tests drive (registered when the tests import them)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from runtime import CallbackTimedOut, ConditionTimedOut, RetryPolicy, step, workflow

HOURLY = RetryPolicy(max_attempts=6, initial_delay=3600, backoff=1.0, max_delay=3600, jitter=False)


@step(name="testkit.charge")
def charge(order: str, amount: float) -> dict[str, Any]:
    return {"id": "real"}


@step(name="testkit.flaky", retry=HOURLY)
def flaky(n: int) -> int:
    return n * 2


@step(name="testkit.square")
def square(n: int) -> int:
    return n * n


@step(name="testkit.async_fetch")
async def async_fetch(key: str) -> str:
    return f"real {key}"


@step(name="testkit.ready")
def ready(flag: str) -> bool:
    return False


@workflow(name="testkit.sleeper")
def sleeper(ctx: Any, seconds: float, times: int = 1) -> dict[str, str]:
    began = ctx.now()
    for _ in range(times):
        ctx.sleep(seconds)
    return {"began": began.isoformat(), "ended": ctx.now().isoformat()}


@workflow(name="testkit.checkout")
def checkout(ctx: Any, order: str) -> dict[str, Any]:
    charged = ctx.step(charge, order, 99.0)
    ctx.sleep(timedelta(days=2))
    callback = ctx.create_callback("approval", timeout=timedelta(days=7))
    try:
        decision = callback.wait()
    except CallbackTimedOut:
        decision = "timed out"
    return {"charge": charged, "decision": decision}


@workflow(name="testkit.retrying")
def retrying(ctx: Any, n: int) -> int:
    return int(ctx.step(flaky, n))


@workflow(name="testkit.heartbeats")
def heartbeats(ctx: Any) -> str:
    callback = ctx.create_callback("job", heartbeat_timeout=timedelta(hours=1))
    try:
        return str(callback.wait())
    except CallbackTimedOut:
        return "silent"


@workflow(name="testkit.condition")
def condition(ctx: Any) -> str:
    try:
        ctx.wait_for_condition(ready, "x", interval=600, timeout=timedelta(hours=1))
    except ConditionTimedOut:
        return "gave up"
    return "ready"


@workflow(name="testkit.receiver")
def receiver(ctx: Any) -> Any:
    return {"message": ctx.recv("orders", timeout=timedelta(hours=3))}


@workflow(name="testkit.signalled")
def signalled(ctx: Any) -> Any:
    return {"signal": ctx.wait_for_signal("paid", timeout=timedelta(hours=5))}


@workflow(name="testkit.fan_out")
def fan_out(ctx: Any, n: int) -> list[int]:
    return list(ctx.map(square, range(1, n + 1)))


@workflow(name="testkit.async_flow")
async def async_flow(ctx: Any, key: str) -> str:
    await ctx.sleep(60)
    return str(await ctx.step(async_fetch, key))


@workflow(name="testkit.child")
def child(ctx: Any, n: int) -> int:
    ctx.sleep(timedelta(days=1))
    return n + 1


@workflow(name="testkit.parent")
def parent(ctx: Any, n: int) -> list[int]:
    return list(ctx.map(child, [n, n + 10]))


@workflow(name="testkit.forever")
def forever(ctx: Any) -> Any:
    return ctx.create_callback("never").wait()


def check_item(item: Any) -> None:
    if not isinstance(item, dict) or not isinstance(item.get("sku"), str):
        raise ValueError("an item needs a sku")


@workflow(name="testkit.cart", updates={"add": check_item, "checkout": None})
def cart(ctx: Any) -> list[str]:
    items: list[str] = []
    while (upd := ctx.next_update("add", "checkout", timeout=timedelta(days=1))) is not None:
        if upd.name == "checkout":
            upd.reply({"items": items, "at": ctx.now().isoformat()})
            return items
        if upd.payload.get("gift"):  # wrapping takes two hours before the answer
            ctx.sleep(timedelta(hours=2))
        if upd.payload.get("ask"):  # someone outside must confirm first
            ctx.create_callback("confirm").wait()
        items.append(upd.payload["sku"])
        upd.reply({"count": len(items)})
    return items  # a day without updates: abandoned
