"""The update benchmark's workflows (`bench update`): a run answering updates one after the
other, and the same conversation through a message and a value. Only `bench update` loads them
(its workers through FANFOLD_WORKFLOW_MODULES)."""

from __future__ import annotations

from typing import Any

from runtime import workflow


@workflow(name="bench.update.counter", updates={"add": None, "stop": None})
def counter(ctx: Any) -> int:
    """Answer each `add` with the running total; `stop` ends the run."""
    total = 0
    while (upd := ctx.next_update()) is not None:
        if upd.name == "stop":
            upd.reply(total)
            return total
        total += int(upd.payload)
        upd.reply(total)
    return total


@workflow(name="bench.update.counter_by_message")
def counter_by_message(ctx: Any) -> int:
    """The same through a mailbox: each message's total is set as value "total:<n>"."""
    total = 0
    n = 0
    while (value := ctx.recv("add")) is not None:
        n += 1
        total += int(value)
        ctx.set_value(f"total:{n}", total)
    return total
