"""A workflow with search attributes for the search acceptance test (loaded by its workers
through FANFOLD_WORKFLOW_MODULES)."""

from __future__ import annotations

from typing import Any

from runtime import workflow

MODULE = __name__


@workflow(name="tests.accept.search.order", search={"customer": int, "region": str})
def order(ctx: Any) -> str:
    return "ok"
