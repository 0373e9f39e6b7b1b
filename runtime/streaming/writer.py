"""`runtime.stream(name).write(value)`: append JSON values to the current run's stream.

From a step body the chunk belongs to the step's run and is written every time the body runs:
chunks are output, not state, so an attempt that later fails keeps what it wrote and a retry
writes again. From workflow code (outside any step) a write would be repeated by every replay,
so each is keyed by where it happened (the workflow's position and the count of writes since)
and a replayed write finds its key and is skipped. `write_with_step` is the cheap form for a
step's output that may wait for the step's end: it rides the checkpoint of the step's result.
"""

from __future__ import annotations

import contextvars
import functools
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from runtime import conf
from runtime.core.current import active_step, bound
from runtime.core.errors import FanfoldError
from runtime.core.identity import check_name
from runtime.core.jsonvalues import checked
from runtime.core.writes import ChunkDraft
from runtime.store.messaging.streams import append_chunk
from runtime.streaming.wakeups import signal_local

DEFAULT_STREAM = "default"


@dataclass
class WorkflowScope:
    """The workflow execution whose code is running in this thread (set by the executor)."""

    run_id: uuid.UUID
    position: Callable[[], int]
    _counts: dict[int, int] = field(default_factory=dict)

    def next_key(self) -> str:
        at = self.position()
        n = self._counts.get(at, 0) + 1
        self._counts[at] = n
        return f"{at}:{n}"


_scope: contextvars.ContextVar[WorkflowScope | None] = contextvars.ContextVar(
    "fanfold_workflow_scope", default=None
)


def workflow_scope(scope: WorkflowScope) -> AbstractContextManager[None]:
    """Mark this thread as running the workflow code of `scope.run_id` (runtime.executor)."""
    return bound(_scope, scope)


class Stream:
    """A named stream of the run this code belongs to."""

    def __init__(self, name: str) -> None:
        self.name = check_name(name, "stream")

    def __repr__(self) -> str:
        return f"<Stream {self.name!r}>"

    def write(self, value: object) -> int | None:
        """Append a JSON value, durably and in order; returns its seq (None when a replayed
        workflow write was already there). Raises PayloadError for a value that is not JSON
        or too large, FanfoldError outside a step or workflow."""
        checked_value, _ = checked(
            value, f"stream {self.name!r} chunk", conf.get().MAX_PAYLOAD_BYTES
        )
        step = active_step()
        if step is not None:
            seq = append_chunk(step.run_id, self.name, checked_value)
            run_id = step.run_id
        else:
            scope = _scope.get()
            if scope is None:
                raise FanfoldError("runtime.stream() writes only from a step or a workflow")
            seq = append_chunk(scope.run_id, self.name, checked_value, scope.next_key())
            run_id = scope.run_id
        signal_local(run_id)  # readers in this process (the embedded worker) wake too
        return seq

    def write_with_step(self, value: object) -> bool:
        """Queue a JSON value to be appended in the transaction that records the running
        inline step's result: it appears when, and only if, the step completes (an attempt
        that fails leaves nothing), and costs no transaction of its own. False, with nothing
        queued, where no inline step runs (a fan-out branch, workflow code): `write` it there.
        Raises PayloadError for a value that is not JSON or too large."""
        step = active_step()
        outbox = None if step is None else step.outbox
        if step is None or outbox is None:
            return False
        checked_value, size = checked(
            value, f"stream {self.name!r} chunk", conf.get().MAX_PAYLOAD_BYTES
        )
        if not outbox.chunks:
            outbox.on_commit.append(functools.partial(signal_local, step.run_id))
        outbox.add(ChunkDraft(self.name, checked_value), size)
        return True


def stream(name: str = DEFAULT_STREAM) -> Stream:
    """The current run's stream `name`, for `.write(value)` from a step or workflow."""
    return Stream(name)
