"""Workflows of the update tests (names prefixed "tests.upd.")."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.exceptions import ValidationError

from runtime import UpdateRejected, step, workflow

CALLS: dict[str, int] = {}


def validate_item(payload: Any) -> None:
    if not isinstance(payload, dict) or not isinstance(payload.get("sku"), str):
        raise ValueError("an item needs a sku")
    if payload["sku"] == "BANNED":
        raise UpdateRejected("that item is not sold")


@step(name="tests.upd.price")
def price(sku: str) -> int:
    CALLS[sku] = CALLS.get(sku, 0) + 1
    return len(sku) * 100


@workflow(name="tests.upd.cart", updates={"add_item": validate_item, "checkout": None})
def cart(ctx: Any, cart_id: str, idle: float | None = None) -> list[Any]:
    items: list[Any] = []
    while (upd := ctx.next_update("add_item", "checkout", timeout=idle)) is not None:
        if upd.name == "checkout":
            upd.reply({"items": items})
            return items
        if upd.payload.get("qty", 1) > 10:
            upd.reject("at most 10 of an item")
            continue
        cost = ctx.step(price, upd.payload["sku"])  # a step between receipt and reply
        items.append(upd.payload)
        upd.reply({"count": len(items), "cost": cost})
    return items


@workflow(name="tests.upd.cart_async", updates={"add_item": validate_item, "checkout": None})
async def cart_async(ctx: Any, cart_id: str) -> list[Any]:
    items: list[Any] = []
    while upd := await ctx.next_update(timeout=timedelta(seconds=30)):
        if upd.name == "checkout":
            upd.reply({"items": items})
            return items
        await ctx.sleep(0.01)  # a durable timer between receipt and reply
        items.append(upd.payload)
        upd.reply({"count": len(items)})
    return items


@workflow(name="tests.upd.silent", updates={"poke": None})
def silent(ctx: Any, fail: bool = False) -> str:
    ctx.next_update("poke")  # taken, never answered
    if fail:
        raise RuntimeError("gave up")
    return "done"


@workflow(name="tests.upd.plain")
def plain(ctx: Any) -> str:
    ctx.sleep(30)
    return "done"


def fussy_check(payload: Any) -> None:
    """A validator with a bug: it indexes the payload without looking at its shape first."""
    if payload == "django":
        raise ValidationError(["not this one", "nor that"])
    if payload["sku"].startswith("X"):  # KeyError or TypeError on an unexpected payload
        raise ValueError("no X items")


@workflow(name="tests.upd.fussy", updates={"add": fussy_check})
def fussy(ctx: Any) -> list[Any]:
    items: list[Any] = []
    while (upd := ctx.next_update("add")) is not None:
        items.append(upd.payload)
        upd.reply({"count": len(items)})
    return items


class SneakyCheck:
    """A validator object whose `__call__` is async: the declaration check cannot see it."""

    async def __call__(self, payload: Any) -> None:
        return None


@workflow(name="tests.upd.sneaky", updates={"x": SneakyCheck()})
def sneaky(ctx: Any) -> Any:
    return ctx.next_update("x")
