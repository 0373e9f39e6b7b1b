"""`ctx.patched(patch_id)`: versioning for code that changes under runs in flight.

A run that reaches the call at the end of its history (a new run, or an old one whose history
had not got this far) records a marker and takes the new branch. A run whose history already
went on past this point without the marker started on older code: it gets False and replays
the old branch. The marker is a record of kind "marker" with its own position; other durable
calls step over markers they do not ask for, so a patch call can be deleted once no open run
lacks its marker (the replay check, runtime.replay_check, tells).
"""

from __future__ import annotations

from runtime.core.identity import check_name
from runtime.core.states import EventType, StepKind, StepStatus
from runtime.durable.calls import DurableCall
from runtime.durable.cursor import ReplayCursor


def patched(cursor: ReplayCursor, patch_id: str) -> bool:
    """The answer of `ctx.patched(patch_id)` for this run at the cursor's position."""
    check_name(patch_id, "patch")
    answer = cursor.patch_answer(patch_id)
    if answer is not None:
        return answer
    call = DurableCall(cursor, cursor.next_position(), patch_id, StepKind.MARKER)
    event = call.event(EventType.MARKER_RECORDED, {"patch_id": patch_id, "answer": True})
    # Async is enough: anything that depends on the answer durably commits after it (FIFO).
    # A marker is recorded, never created: no `step_created` precedes it.
    call.finish(StepStatus.COMPLETED, event, announced=False, result=True)
    return True
