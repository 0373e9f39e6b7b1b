"""The signal benchmark's workflows (`bench signals`): a run waiting for its own signal, and
the same run waiting for a callback instead. Only `bench signals` loads them (its workers
through FANFOLD_WORKFLOW_MODULES), so the other scenarios measure workers as they were.
"""

from __future__ import annotations

from typing import Any

from runtime import workflow


@workflow(name="bench.signals.wait")
def wait_signal(ctx: Any, name: str, order_id: str) -> Any:
    """Wait for signal `name` whose payload carries this `order_id`; return the payload."""
    return ctx.wait_for_signal(name, match={"order_id": order_id})


@workflow(name="bench.signals.callback")
def wait_callback(ctx: Any) -> Any:
    """Wait for one callback post; return its result."""
    return ctx.create_callback("bench.paid").wait()
