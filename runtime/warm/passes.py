"""How an execution pass uses the warm cache: its claim takes the run out of the cache (with the
history's tail only), its workflow call resumes the parked workflow or parks a new one, and a
committed suspend keeps it warm again.

A warm run is used only if it still fits the run as claimed: the same workflow code and
version, and the run waiting (a run that was cancelled, finished or is held by another
executor is not claimed at all, and its warm copy is dropped). Whoever ran the run in between
(another worker took a resume, or took it over), the records the parked workflow saw finished
are the database's, and every later one is read again; the workflow goes on by making its
waiting call again over them (runtime.durable.parking).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from runtime.context import DurableContext
from runtime.core.clock import Clock
from runtime.core.history import RecordedStep
from runtime.durable.parking import Parked, ParkedWorkflow
from runtime.durable.session import ExecutionSession
from runtime.models import RunStatus
from runtime.store.runs.run_statements import RunClaim, claim_run_with_history
from runtime.store.runs.warm_reads import claim_run_with_tail, load_tail
from runtime.warm import routing
from runtime.warm.cache import WarmRun, warm_runs
from runtime.workflow_call import WorkflowContext, new_workflow_context

History = dict[int, RecordedStep]


def claim(
    run_id: uuid.UUID, token: str, now: datetime, owner: int | None, fn_of: Callable[[str], Any]
) -> tuple[RunClaim, History | None, WarmRun | None] | None:
    """Take the run's lease: with its whole history, or, when this thread holds it warm, with
    the records the parked workflow needs again. None if the run was not claimed. `fn_of`
    gives the code this worker runs for a workflow name."""
    warm = warm_runs().take(run_id)
    if warm is None:
        found = claim_run_with_history(run_id, token, now, owner)
        return None if found is None else (*found, None)
    start = warm.ctx.cursor.first_open_position()
    tail = claim_run_with_tail(run_id, token, now, owner, start)
    if tail is None:
        warm.drop()
        return None
    claimed, news = tail
    fits = (
        claimed.status == RunStatus.WAITING
        and claimed.workflow == warm.workflow
        and claimed.app_version == warm.app_version
        and fn_of(claimed.workflow) is warm.fn
    )
    if not fits:
        warm.drop()
        return claimed, None, None  # the pass reads the whole history
    warm.news = news
    return claimed, {}, warm


def read_on(warm: WarmRun | None) -> WarmRun | None:
    """`warm`, handed over by a pass whose suspend a wake-up raced, with the records its next
    pass needs again (the lease still held: nothing to claim)."""
    if warm is not None:
        warm.news = load_tail(warm.run_id, warm.ctx.cursor.first_open_position())
    return warm


class WarmPass:
    """The workflow call of one pass, parked where it can be (a sync workflow, the cache on)."""

    def __init__(
        self, run_id: uuid.UUID, claimed: RunClaim, fn: Callable[..., Any], warm: WarmRun | None
    ) -> None:
        self._run_id = run_id
        self._claimed = claimed
        self._fn = fn
        self._warm = warm
        self._parked: ParkedWorkflow | None = None
        self._ctx: WorkflowContext | None = None

    @property
    def warm(self) -> bool:
        return self._warm is not None

    def context(self, session: ExecutionSession, history: History, clock: Clock) -> WorkflowContext:
        """The warm run's context carried into this pass, or a new one over `history`."""
        if self._warm is not None:
            ctx: WorkflowContext = self._warm.ctx
            ctx.resume_pass(session, clock, self._warm.news)
        else:
            ctx = new_workflow_context(self._fn, session, history, clock)
        self._ctx = ctx
        return ctx

    def call(self, invoke: Callable[[], Any]) -> Any:
        """`invoke()` (the workflow's call) or the parked workflow's resume: its result; raises
        what it raises, or the `Suspend` it parked with."""
        ctx = self._ctx
        if self._warm is not None:
            self._parked = self._warm.parked
        elif isinstance(ctx, DurableContext) and warm_runs().size > 0:
            self._parked = ParkedWorkflow(ctx.cursor, invoke)
        else:
            return invoke()
        outcome = self._parked.switch()
        if isinstance(outcome, Parked):
            raise outcome.suspend
        return outcome

    def route(self) -> str | None:
        """Where this pass's suspend sends the run's resumes: this worker node's queue if the
        workflow parked (runtime.warm.routing), else None (any worker)."""
        parked = self._parked
        return routing.parked_here() if parked is not None and parked.parked else None

    def suspended(self) -> None:
        """The run's suspend committed: keep its parked workflow warm."""
        warm = self.handover()
        if warm is not None:
            warm_runs().keep(warm)

    def handover(self) -> WarmRun | None:
        """The parked workflow, out of this pass (None if it did not park)."""
        parked, ctx = self._parked, self._ctx
        if parked is None or not parked.parked or not isinstance(ctx, DurableContext):
            return None
        self._parked = None
        claimed = self._claimed
        return WarmRun(self._run_id, claimed.workflow, claimed.app_version, self._fn, ctx, parked)

    def close(self) -> None:
        """The pass is over: a parked workflow not kept warm is dropped."""
        if self._parked is not None:
            self._parked.drop()
            self._parked = None
