"""Workflows of the search tests (names prefixed "tests.search.")."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from runtime import step, workflow

CALLS: dict[str, int] = {}

ORDER = {"customer": int, "region": str, "amount": float, "vip": bool, "due": datetime}


@step(name="tests.search.charge")
def charge(order: str) -> str:
    CALLS[order] = CALLS.get(order, 0) + 1
    return f"charged {order}"


@workflow(name="tests.search.order", search=ORDER)
def order(ctx: Any, order_id: str, fail: bool = False) -> str:
    ctx.step(charge, order_id)
    ctx.set_search(region="eu-west", amount=250.5)
    ctx.sleep(0.01)  # a suspension: everything above replays
    if fail:
        raise ValueError(f"card declined for {order_id}")
    return order_id


@workflow(name="tests.search.quick", search=ORDER)
def quick(ctx: Any, fail: bool = False) -> str:
    if fail:
        raise ValueError("card declined")
    return "ok"


@workflow(name="tests.search.async_order", search={"stage": str})
async def async_order(ctx: Any) -> str:
    ctx.set_search(stage="packed")
    await ctx.sleep(0.01)
    ctx.set_search(stage="shipped")
    return "done"


@workflow(name="tests.search.bad_set", search={"customer": int})
def bad_set(ctx: Any) -> str:
    ctx.set_search(customer="not a number")
    return "unreachable"
