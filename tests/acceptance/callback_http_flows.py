"""The workflow the HTTP callback acceptance test runs; workers import it through
FANFOLD_WORKFLOW_MODULES=tests.acceptance.callback_http_flows."""

from __future__ import annotations

from typing import Any

from runtime import workflow


def announce(token_prefix: str) -> str:
    return token_prefix


@workflow(name="tests.http.approval")
def approval(ctx: Any, order: str) -> dict[str, Any]:
    cb = ctx.create_callback("approval", timeout=600)
    ctx.step(announce, cb.token[:4])
    return {"order": order, "decision": cb.wait()}
