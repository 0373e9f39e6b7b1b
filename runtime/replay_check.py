"""The replay check: does the current code still match recorded histories?

`check_history` re-executes a workflow function over one recorded history with a cursor that
answers every durable call from the record and writes nothing: no step body, sleep, callback
or fan-out runs, nothing is published. The first position where the code no longer matches
is reported: another name or kind than the recorded one, a durable call at a position the
history lacks, or recorded steps the code no longer reaches. A call that would act at the
history's frontier (a step still running, a sleep not yet over, an open fan-out) ends the
check there: up to that point the code matches.

`runtime.testing.replay(run_id)` checks one run; `python manage.py fanfold replay` many.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, cast

from runtime import conf
from runtime.checkpoint.writer import CheckpointWriter
from runtime.core.clock import SystemClock
from runtime.core.control import Suspend
from runtime.core.errors import NonDeterminismError, WorkflowNotFound
from runtime.core.history import RecordedStep
from runtime.core.states import StepKind
from runtime.core.writes import HistoryWrite
from runtime.durable.cursor import ReplayCursor
from runtime.durable.session import ExecutionSession
from runtime.models import Run, RunStatus
from runtime.registry import registry
from runtime.services import get_run_row
from runtime.store.runs.run_statements import load_histories, load_history
from runtime.workflow_call import call_workflow, new_workflow_context

# Why a replay did not match, as `Mismatch.reason` says it.
CHANGED_NAME = "name"  # another step name at a recorded position
CHANGED_KIND = "kind"  # another kind (step, sleep, callback, child) at a recorded position
HISTORY_LACKS_STEP = "history_lacks_step"  # a durable call where the history holds nothing
UNREACHED = "unreached"  # the code finished or stopped before steps the history recorded
OUTCOME = "outcome"  # the code raised where the recorded run completed
UNKNOWN_WORKFLOW = "unknown_workflow"


@dataclass(frozen=True)
class Mismatch:
    """Where and why the code no longer matches a history."""

    position: int | None
    reason: str
    message: str


@dataclass(frozen=True)
class ReplayReport:
    """The replay check of one run: `ok` unless `mismatch` says where it went wrong."""

    run_id: uuid.UUID
    workflow: str
    status: str
    positions: int  # positions the code walked through
    mismatch: Mismatch | None = None

    @property
    def ok(self) -> bool:
        return self.mismatch is None

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON values (the command's `--json`)."""
        mismatch = self.mismatch
        return {
            "run_id": str(self.run_id),
            "workflow": self.workflow,
            "status": self.status,
            "ok": self.ok,
            "positions": self.positions,
            "mismatch": None if mismatch is None else mismatch.__dict__,
        }


class _Stop(BaseException):
    """Ends the walk: the code asked to act (write) at `position`. A BaseException, like
    Suspend, so that `except Exception` in workflow code cannot swallow it."""

    def __init__(self, position: int, name: str = "", kind: str = "") -> None:
        super().__init__(position)
        self.position = position
        self.name = name
        self.kind = kind


class _HistoryEnd(_Stop):
    """At the history's frontier: what the run does next is not recorded yet."""


class _HistoryLacks(_Stop):
    """A durable call at a position a finished history should hold and does not."""


class _NoWriter:
    """The writer of a check session: waits on nothing, accepts no checkpoint."""

    def barrier(self, session: str) -> None:
        return None

    def reset_session(self, session: str) -> None:
        return None

    def write(self, cp: object) -> None:
        raise RuntimeError("the replay check writes nothing")

    submit = write


class CheckingCursor(ReplayCursor):
    """A cursor over a recorded history that answers from it and writes nothing.

    `strict` (a completed run) makes any call past the recorded end a mismatch; for other
    runs the end of the history is where the run is now, and new calls there are fine.
    """

    def __init__(self, run_id: uuid.UUID, recorded: dict[int, RecordedStep], strict: bool) -> None:
        # The session's writer is never handed a checkpoint (`checkpoint` below stops first);
        # a callback's time-out only asks it for a barrier, which has nothing to wait for.
        session = ExecutionSession(run_id, "replay-check", 0, cast(CheckpointWriter, _NoWriter()))
        super().__init__(session, dict(recorded), SystemClock(), conf.get().MAX_PAYLOAD_BYTES)
        self._held = frozenset(recorded)
        self._end = max(recorded, default=0)
        self._strict = strict

    @property
    def is_replaying(self) -> bool:
        return True  # ctx.logger stays silent throughout

    def before_dispatch(self) -> None:
        self._stop(_HistoryEnd(self.position))

    def checkpoint(self, write: HistoryWrite, *, sync: bool, payload_bytes: int = 0) -> None:
        rows = write.steps
        if rows and all(row.kind == StepKind.MARKER for row in rows):
            return  # a new patch marker is answered (True) without being written
        if not rows:
            self._stop(_HistoryEnd(self.position))
        first = min(rows, key=lambda row: row.position)
        if first.position in self._held or (not self._strict and first.position > self._end):
            self._stop(_HistoryEnd(first.position))
        self._stop(_HistoryLacks(first.position, first.name, first.kind))

    def _stop(self, stop: _Stop) -> NoReturn:
        self.fail(stop)  # sticky: no later durable call may go on past it
        raise stop


def check_history(
    run_id: uuid.UUID,
    workflow: str,
    status: str,
    run_input: dict[str, Any],
    recorded: dict[int, RecordedStep],
) -> ReplayReport:
    """Replay one recorded history against the registered code of `workflow`."""
    try:
        wf = registry.workflow(workflow)
    except WorkflowNotFound as exc:
        return ReplayReport(run_id, workflow, status, 0, Mismatch(None, UNKNOWN_WORKFLOW, str(exc)))
    cursor = CheckingCursor(run_id, recorded, strict=status == RunStatus.COMPLETED)
    ctx = new_workflow_context(wf.fn, cursor.session, recorded, cursor.clock, cursor=cursor)
    raised: BaseException | None = None
    try:
        call_workflow(wf.fn, ctx, run_input.get("args", []), run_input.get("kwargs", {}))
    except (KeyboardInterrupt, SystemExit):
        raise
    except (_HistoryEnd, Suspend):
        pass
    except BaseException as exc:  # the workflow's own failure: judged below
        raised = exc
    mismatch = _judged(cursor, recorded, status, cursor.fatal or raised)
    return ReplayReport(run_id, workflow, status, cursor.position, mismatch)


def _judged(
    cursor: CheckingCursor,
    recorded: dict[int, RecordedStep],
    status: str,
    raised: BaseException | None,
) -> Mismatch | None:
    if isinstance(raised, _HistoryLacks):
        return Mismatch(
            raised.position,
            HISTORY_LACKS_STEP,
            f"the code reached {raised.kind} {raised.name!r} at position {raised.position}, "
            "which the history lacks",
        )
    if isinstance(raised, NonDeterminismError):
        reason = {"kind": CHANGED_KIND, "missing": HISTORY_LACKS_STEP}.get(
            raised.differs, CHANGED_NAME
        )
        return Mismatch(raised.position, reason, raised.message)
    beyond = sorted(
        p for p, r in recorded.items() if p > cursor.position and r.kind != StepKind.MARKER
    )
    if beyond:
        record = recorded[beyond[0]]
        return Mismatch(
            record.position,
            UNREACHED,
            f"the history records {record.kind} {record.name!r} at position {record.position}, "
            "which the code no longer reaches",
        )
    if raised is not None and not isinstance(raised, _Stop) and status == RunStatus.COMPLETED:
        return Mismatch(
            cursor.position or None,
            OUTCOME,
            f"the code raised {type(raised).__name__}: {raised} where the run completed",
        )
    return None


def replay(run_id: uuid.UUID | str) -> ReplayReport:
    """Check one run's recorded history against the current code (raises RunNotFound)."""
    run = get_run_row(run_id)
    return check_history(run.id, run.workflow, run.status, run.input, load_history(run.id))


def replay_runs(runs: Iterable[Run] | Sequence[Run], chunk: int = 500) -> Iterator[ReplayReport]:
    """Check many runs, loading the histories of `chunk` runs per query."""
    batch: list[Run] = []
    for run in runs:
        batch.append(run)
        if len(batch) >= chunk:
            yield from _checked_batch(batch)
            batch = []
    if batch:
        yield from _checked_batch(batch)


def _checked_batch(batch: list[Run]) -> Iterator[ReplayReport]:
    histories = load_histories([run.id for run in batch])
    for run in batch:
        yield check_history(run.id, run.workflow, run.status, run.input, histories[run.id])
