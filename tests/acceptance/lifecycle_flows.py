"""Workflows of the payloads-at-rest acceptance test; workers import them through
FANFOLD_WORKFLOW_MODULES=tests.acceptance.lifecycle_flows. The secret travels as data only:
in the run's input, a step's result, a stream chunk and a callback's payload."""

from __future__ import annotations

from typing import Any

from runtime import step, stream, workflow

MODULE = __name__


@step(name="tests.lifecycle_at_rest.reveal")
def reveal(secret: str) -> dict[str, str]:
    stream().write({"chunk": f"chunk-{secret}"})
    return {"result": f"result-{secret}"}


@workflow(name="tests.lifecycle_at_rest.secretive")
def secretive(ctx: Any, secret: str) -> dict[str, Any]:
    revealed = ctx.step(reveal, secret)
    answer = ctx.create_callback("answer", timeout=120).wait()
    return {"revealed": revealed, "answer": answer, "final": f"final-{secret}"}
