"""Workflows of the warm-resume tests (names prefixed "tests.warm.")."""

from __future__ import annotations

from collections import Counter
from typing import Any

from runtime import send, step, workflow

# How many times each run's code started from its beginning: once per pass when resumes
# replay, once in all when they resume a parked workflow.
STARTS: Counter[str] = Counter()
UNWOUND: Counter[str] = Counter()


@step(name="tests.warm.double")
def double(x: int) -> int:
    return 2 * x


@workflow(name="tests.warm.program")
def program(ctx: Any, ops: list[list[Any]]) -> list[Any]:
    """Make the calls `ops` name, in order: ["step", n], ["sleep", s], ["recv", topic],
    ["patched", id], ["value", v], ["map", n] (a fan-out of two branches), ["now", 0]."""
    STARTS[str(ctx.run_id)] += 1
    out: list[Any] = []
    try:
        for op, arg in ops:
            if op == "step":
                out.append(ctx.step(double, arg))
            elif op == "sleep":
                ctx.sleep(arg)
            elif op == "recv":
                out.append(ctx.recv(arg))
            elif op == "patched":
                out.append(ctx.patched(arg))
            elif op == "value":
                ctx.set_value("v", arg)
            elif op == "map":
                out.append(ctx.map(double, [arg, arg + 1]))
            elif op == "now":
                out.append(ctx.now().isoformat())
    except BaseException:
        UNWOUND[str(ctx.run_id)] += 1
        raise
    return out


@workflow(name="tests.warm.program_async")
async def program_async(ctx: Any, topics: list[str]) -> list[Any]:
    STARTS[str(ctx.run_id)] += 1
    return [await ctx.recv(topic) for topic in topics]


@step(name="tests.warm.poke")
def poke(run_id: str) -> None:
    """Wake the run that runs this step before it suspends (its suspend loses that race)."""
    send(run_id, "poke", 1)


@workflow(name="tests.warm.raced")
def raced(ctx: Any) -> Any:
    STARTS[str(ctx.run_id)] += 1
    ctx.step(poke, str(ctx.run_id))
    return ctx.recv("b")


@workflow(name="tests.warm.on_signal")
def on_signal(ctx: Any, tag: str) -> Any:
    return ctx.wait_for_signal("tests.warm.ping", match={"tag": tag})


@workflow(name="tests.warm.updated", updates={"add": None})
def updated(ctx: Any) -> Any:
    upd = ctx.next_update("add")
    upd.reply(upd.payload)
    return upd.payload
