"""`ctx.set_search(**values)`: change a run's search attributes from workflow code, durably.

The call takes a position like `ctx.set_value`: the attributes are written first (keyed by the
position, so a replay never regresses a newer value), then a completed record of kind "search"
with a `search_set` event whose payload holds the values; a replay answers from that record
(the replay check compares its name and kind like any call's) and a fork copies it.
"""

from __future__ import annotations

from typing import Any

from runtime.core.errors import RunNotFound
from runtime.core.search import checked_values
from runtime.core.states import EventType, StepKind, StepStatus
from runtime.durable.calls import DurableCall
from runtime.durable.cursor import ReplayCursor
from runtime.registry import registry
from runtime.store.runs.search_rows import attribute_rows, run_workflow, set_attributes

NAME = "set_search"


def set_search(cursor: ReplayCursor, values: dict[str, Any], position: int | None = None) -> None:
    """Set the run's search attributes `values` (checked against its workflow's declaration:
    InvalidArguments before anything is recorded) once per position."""
    position = cursor.next_position() if position is None else position
    call = DurableCall(cursor, position, NAME, StepKind.SEARCH)
    if call.recorded is not None:
        return
    workflow = run_workflow(cursor.run_id)
    if workflow is None:
        raise RunNotFound(f"no run {cursor.run_id}")
    wf = registry.workflow(workflow)
    checked = checked_values(wf.name, wf.search, values)
    set_attributes(attribute_rows(cursor.run_id, wf.search, checked, position))
    event = call.event(EventType.SEARCH_SET, {"search": checked})
    call.finish(StepStatus.COMPLETED, event, result=checked)
