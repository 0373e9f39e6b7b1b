"""`bench soak`'s load: a paced producer of the mixed runs, and the follower that sees each
run to its end, answers the runs that wait on a person or another system, and times them.

Each cycle starts the same mix (MIX): a sequential run, a fan-out, a fan-out of async I/O
branches, a run waiting for a callback post, one waiting for a signal, Django tasks, and every
AGENT_EVERY cycles an agent whose refund waits for an approval. The follower reads the runs
still in flight; a waiting callback run gets its post, a signal run its signal, an agent its
approval; a finished run gives its latency (created to finished, the database's own times) and
its steps' (created to finished), then leaves the books. Django task runs share one workflow
with every Django task of the database, which no retention of the soak's may touch: the bench
deletes them itself once counted. The soak's own runs are left to the retention purge.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bench import soak_workflows as flows
from bench.task_noops import fanfold_noop
from runtime import emit_signal
from runtime.agents.approvals import approvals, decide
from runtime.handles import start
from runtime.models import Run, Step
from runtime.models.states import FINISHED_RUN_STATES, RunStatus, StepKind
from runtime.services import post_callback
from runtime.testing import callback_token

SEQUENTIAL_STEPS = 20
BRANCHES = 10
IO_MS = 20.0
TASKS_PER_CYCLE = 2
AGENT_EVERY = 10  # cycles
ANSWERED_KINDS = ("callback", "signal", "agent")
MAX_ERRORS_KEPT = 50


@dataclass
class Tally:
    """What finished since the tally began: latencies in milliseconds, counts by status."""

    run_ms: list[float] = field(default_factory=list)
    step_ms: list[float] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)


class Load:
    """The producer and the follower; one per soak, driven by the soak's loop."""

    def __init__(self) -> None:
        self.inflight: dict[uuid.UUID, str] = {}
        self.answered: set[uuid.UUID] = set()
        self.orders: dict[uuid.UUID, str] = {}  # a signal run's order id
        self.tag = uuid.uuid4().hex[:8]  # this soak's order ids: no earlier soak's waits match
        self.started: Counter[str] = Counter()
        self.finished: Counter[str] = Counter()
        self.errors: list[str] = []
        self.error_count = 0
        self.unobserved = 0  # runs gone before they were seen finished
        self.cycles = 0
        self.tally = Tally()

    def take_tally(self) -> Tally:
        tally, self.tally = self.tally, Tally()
        return tally

    def error(self, text: str) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(text)

    def start_cycle(self) -> None:
        """Start one cycle of the mix."""
        n = self.cycles
        self.cycles += 1
        mix: list[tuple[str, Any]] = [
            ("sequential", lambda: start(flows.sequential, SEQUENTIAL_STEPS).id),
            ("fanout", lambda: start(flows.fanout, BRANCHES).id),
            ("io_fanout", lambda: start(flows.io_fanout, BRANCHES, IO_MS).id),
            ("callback", lambda: start(flows.callback).id),
            ("signal", lambda: start(flows.signal, f"{self.tag}-{n}").id),
        ]
        mix += [("task", lambda: uuid.UUID(fanfold_noop.enqueue(n).id))] * TASKS_PER_CYCLE
        if n % AGENT_EVERY == 0:
            mix.append(("agent", lambda: start(flows.agent, "my order arrived damaged").id))
        for kind, begin in mix:
            try:
                rid = begin()
                self.inflight[rid] = kind
                self.started[kind] += 1
                if kind == "signal":
                    self.orders[rid] = f"{self.tag}-{n}"
            except Exception as exc:  # reported in the soak's errors; the load goes on
                self.error(f"starting a {kind} run: {exc!r}")

    def follow(self) -> None:
        """Read the runs in flight: answer the waiting ones, book and forget the finished."""
        rows = Run.objects.filter(id__in=list(self.inflight)).values_list(
            "id", "status", "created_at", "finished_at", "error"
        )
        seen: set[uuid.UUID] = set()
        done: list[uuid.UUID] = []
        for rid, status, created, finished, error in rows:
            seen.add(rid)
            kind = self.inflight[rid]
            if status in FINISHED_RUN_STATES and finished is not None:
                done.append(rid)
                self._book(rid, kind, status, (finished - created).total_seconds() * 1000, error)
            elif status == RunStatus.WAITING and kind in ANSWERED_KINDS:
                self._answer(rid, kind)
        gone = set(self.inflight) - seen
        for rid in gone:
            self.unobserved += 1
            self.error(f"{self.inflight[rid]} run {rid} was gone before it was seen finished")
        self._book_steps(done)
        tasks = [rid for rid in done if self.inflight[rid] == "task"]
        for rid in [*done, *gone]:
            del self.inflight[rid]
            self.answered.discard(rid)
            self.orders.pop(rid, None)
        if tasks:
            Run.objects.filter(id__in=tasks).delete()

    def _book(self, rid: uuid.UUID, kind: str, status: str, took_ms: float, error: Any) -> None:
        self.finished[status] += 1
        self.tally.statuses[status] += 1
        self.tally.run_ms.append(took_ms)
        if status != RunStatus.COMPLETED:
            self.error(f"{kind} run {rid} ended {status}: {str(error)[:300]}")

    def _book_steps(self, runs: list[uuid.UUID]) -> None:
        if not runs:
            return
        steps = Step.objects.filter(
            run_id__in=runs, kind=StepKind.STEP, finished_at__isnull=False
        ).values_list("created_at", "finished_at")
        self.tally.step_ms += [
            (end - begin).total_seconds() * 1000 for begin, end in steps if end is not None
        ]

    def _answer(self, rid: uuid.UUID, kind: str) -> None:
        if rid in self.answered:
            return
        try:
            if kind == "callback":
                post_callback(callback_token(rid), result={"amount": 10})
            elif kind == "signal":
                paid = {"order_id": self.orders[rid], "amount": 10}
                if emit_signal(flows.SIGNAL, paid) != 1:
                    return  # its wait is not recorded yet: the next pass emits again
            else:
                pending = [a for a in approvals(rid) if a.approved is None]
                if not pending:
                    return  # waiting, but not asked yet
                for approval in pending:
                    decide(rid, approval.id, True, by={"username": "bench-soak"})
            self.answered.add(rid)
        except Exception as exc:  # reported in the soak's errors; the load goes on
            self.answered.add(rid)
            self.error(f"answering {kind} run {rid}: {exc!r}")
