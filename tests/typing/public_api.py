"""The public API as a user's type checker sees it: each result pinned with `assert_type`.

Never imported or run: mypy and pyright check it (scripts/test's lint section, and
tests/typing/test_typing_public_api.py). The lines marked WRONG must stay errors: their
`# type: ignore[...]` (mypy's warn_unused_ignores) and `# pyright: ignore[...]` (pyright's
reportUnnecessaryTypeIgnoreComment) fail the check once the error disappears.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, assert_type

from runtime import (
    AsyncDurableContext,
    DurableContext,
    RetryPolicy,
    RunHandle,
    Signature,
    StepFailed,
    get_run,
    start,
    step,
    workflow,
)
from runtime.django_tasks.compat import task
from runtime.registry import StepFunction, WorkflowFunction


@step
def charge(order_id: str, amount: float) -> dict[str, Any]:
    return {"order": order_id, "amount": amount}


@step(retry=RetryPolicy(max_attempts=5))
def fetch_price(sku: str) -> float:
    return 1.0


@step
async def fetch_page(url: str) -> bytes:
    return b""


def tally(count: int) -> str:
    return str(count)


def shipped(order_id: str) -> dict[str, str] | None:
    return None


@task()
def add(a: int, b: int) -> int:
    return a + b


@task()
def triple(x: int) -> int:
    return 3 * x


@workflow
def child(ctx: DurableContext, n: int) -> int:
    return n


@workflow
async def achild(ctx: AsyncDurableContext, n: int) -> str:
    return str(n)


@workflow(name="typing.checkout")
def checkout(ctx: DurableContext, order_id: str) -> dict[str, Any]:
    order = ctx.step(charge, order_id, 9.5)
    assert_type(order, dict[str, Any])
    assert_type(ctx.step(tally, 3), str)
    assert_type(ctx.step(fetch_page, "https://example.com"), bytes)  # run to its end
    assert_type(ctx.step(tally, 3, name="tally"), str)
    assert_type(ctx.step(charge, order_id, 1.0, retry=RetryPolicy()), dict[str, Any])
    assert_type(ctx.step(add, 1, 2), int)  # a Django task is a step
    assert_type(fetch_price.s("a"), Signature[float])
    assert_type(fetch_page.s("u"), Signature[bytes])
    assert_type(child.s(1), Signature[int])
    assert_type(achild.s(1), Signature[str])
    assert_type(ctx.all([fetch_price.s("a"), fetch_price.s("b")]), list[float])
    assert_type(ctx.all([child.s(1)], return_exceptions=True), list[int | StepFailed])
    assert_type(ctx.map(fetch_price, ["a", "b"], max_concurrency=2), list[float])
    assert_type(ctx.map(fetch_page, ["u"]), list[bytes])
    assert_type(ctx.map(child, [1, 2]), list[int])
    assert_type(ctx.map(triple, [1, 2]), list[int])
    assert_type(ctx.wait_for_condition(shipped, order_id, interval=1.0), dict[str, str])
    callback = ctx.create_callback("approval")
    assert_type(callback.token, str)
    assert_type(callback.wait(), Any)
    assert_type(ctx.recv("payments"), Any)
    assert_type(ctx.sleep(1.0), None)
    assert_type(ctx.now(), datetime)
    assert_type(ctx.uuid4(), uuid.UUID)
    assert_type(ctx.patched("v2"), bool)
    # WRONG: charge takes a str order id.
    ctx.step(charge, 42, 9.5)  # type: ignore[call-overload]  # pyright: ignore[reportCallIssue, reportArgumentType]
    # WRONG: fetch_price maps over strs.
    ctx.map(fetch_price, [1, 2])  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    return order


@workflow(name="typing.acheckout")
async def acheckout(ctx: AsyncDurableContext, order_id: str) -> int:
    assert_type(await ctx.step(charge, order_id, 9.5), dict[str, Any])
    assert_type(await ctx.step(fetch_page, "https://example.com"), bytes)
    assert_type(await ctx.step(tally, 1), str)  # a plain step runs in a thread
    assert_type(await ctx.step(add, 1, 2), int)
    assert_type(await ctx.all([fetch_price.s("a")]), list[float])
    assert_type(await ctx.map(fetch_page, ["u"]), list[bytes])
    assert_type(await ctx.map(triple, [1]), list[int])
    assert_type(await ctx.map(achild, [1]), list[str])
    assert_type(await ctx.wait_for_condition(shipped, order_id), dict[str, str])
    callback = ctx.create_callback("approval")
    assert_type(await callback.wait(), Any)
    assert_type(await ctx.recv("payments"), Any)
    assert_type(await ctx.sleep(1.0), None)
    assert_type(ctx.now(), datetime)  # plain calls stay plain
    # WRONG: charge takes a str order id.
    await ctx.step(charge, 42, 9.5)  # type: ignore[call-overload]  # pyright: ignore[reportCallIssue, reportArgumentType]
    return 1


def from_outside() -> None:
    typed_step: StepFunction[[str, float], dict[str, Any]] = charge  # keeps its signature
    assert_type(charge("42", 9.5), dict[str, Any])  # calling a step runs its body directly
    typed_workflow: WorkflowFunction[[str], dict[str, Any]] = checkout
    assert_type(typed_step.name, str)
    assert_type(typed_workflow.name, str)
    handle = start(checkout, "42", idempotency_key="order-42")
    assert_type(handle, RunHandle[dict[str, Any]])
    assert_type(handle.wait(timeout=30), dict[str, Any])
    assert_type(start(acheckout, "42").wait(), int)
    assert_type(start("typing.checkout", "42"), RunHandle[Any])
    assert_type(get_run(handle.id), RunHandle[Any])


async def from_async_view() -> None:
    from runtime import astart

    handle = await astart(acheckout, "42")
    assert_type(await handle.aresult(), int)
