"""Workflows of the messaging tests (names prefixed "tests.msg.")."""

from __future__ import annotations

from typing import Any

from runtime import emit_signal, send, step, workflow

COUNT: dict[str, int] = {}


@step(name="tests.msg.count")
def count(key: str) -> int:
    COUNT[key] = COUNT.get(key, 0) + 1
    return COUNT[key]


@workflow(name="tests.msg.inbox")
def inbox(ctx: Any, topic: str, n: int, timeout: float | None = None) -> list[Any]:
    return [ctx.recv(topic, timeout=timeout) for _ in range(n)]


@workflow(name="tests.msg.inbox_async")
async def inbox_async(ctx: Any, topic: str, n: int) -> list[Any]:
    return [await ctx.recv(topic) for _ in range(n)]


@workflow(name="tests.msg.forward")
def forward(ctx: Any, to: str, topic: str) -> int:
    send(to, topic, {"from": str(ctx.run_id)})
    ctx.step(count, f"forward:{ctx.run_id}")
    ctx.sleep(0.05)  # a suspension: the send above replays
    return 1


@workflow(name="tests.msg.progress")
def progress(ctx: Any, steps: int) -> str:
    for i in range(steps):
        ctx.set_value("progress", {"done": i + 1, "of": steps})
    ctx.recv("finish")
    return "done"


@workflow(name="tests.msg.progress_async")
async def progress_async(ctx: Any) -> str:
    ctx.set_value("progress", 1)
    await ctx.recv("finish")
    return "done"


@workflow(name="tests.msg.paid")
def paid(
    ctx: Any, order_id: str, timeout: float | None = None, lookback: float | None = None
) -> Any:
    return ctx.wait_for_signal(
        "payment.settled", match={"order_id": order_id}, timeout=timeout, lookback=lookback
    )


@workflow(name="tests.msg.paid_async")
async def paid_async(ctx: Any, order_id: str) -> Any:
    return await ctx.wait_for_signal("payment.settled", match={"order_id": order_id})


@workflow(name="tests.msg.emitter")
def emitter(ctx: Any, order_id: str) -> int:
    took = emit_signal("payment.settled", {"order_id": order_id, "by": "workflow"})
    ctx.sleep(0.05)
    return took


@workflow(name="tests.msg.echo")
def echo(ctx: Any, value: Any) -> Any:
    return value


@workflow(name="tests.msg.single_skip", concurrency=1, on_limit="skip")
def single_skip(ctx: Any, label: str) -> str:
    ctx.recv("go")
    return label


@workflow(name="tests.msg.single_replace", concurrency=1, on_limit="cancel_running")
def single_replace(ctx: Any, label: str) -> str:
    ctx.recv("go")
    return label


@workflow(name="tests.msg.single_queue", concurrency=1)
def single_queue(ctx: Any, label: str) -> str:
    ctx.recv("go")
    return label
