"""`ctx.all` / `ctx.map`: run registered steps or child workflows as parallel branches.

A fan-out of N branches takes the next N positions. The first execution records every branch
(a pending step row and its step_created event) and the group row in ONE synchronous
checkpoint, publishes the first `max_concurrency` branch messages only after that commit, and
suspends the run. Branches run on any worker (runtime.fanout.branch); the completion that decides
the group wakes the run, and replay reads the outcome from the recorded branch rows.

A replay that finds the group still open republishes its released unfinished branches (a
duplicate loses its claim) and suspends again: this is how a retryable publish failure, or a
crash between commit and publish, is repaired. A permanent publish failure fails the run.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from datetime import datetime, timedelta
from itertools import repeat
from typing import Any

from publisher import PublishError
from runtime import conf
from runtime.core import history
from runtime.core.branch_dispatch import (
    BranchDispatch,
    chunked,
    due_dispatches,
    republished_pending,
)
from runtime.core.control import Suspend
from runtime.core.errors import NonDeterminismError, StepFailed
from runtime.core.fanin import FAILED, FanInRule, initial_release
from runtime.core.identity import group_id, step_id
from runtime.core.settle import Failure, settle
from runtime.core.states import StepStatus
from runtime.core.writes import FanoutGroupRow, HistoryWrite, StepRow, step_created
from runtime.dispatch import publish_branches
from runtime.durable.cursor import ReplayCursor
from runtime.fanout.interrupted import interrupt_at_most_once
from runtime.fanout.sweep import republish_rule
from runtime.registry import Signature, SignatureMap, registry
from runtime.store.fanout.fanout_groups import group_row, record_dispatch
from runtime.versions.depth import served_queue_depth

log = logging.getLogger("fanfold.fanout")

REPUBLISH_DELAY = 1.0  # seconds before a run whose branch publish failed (retryably) tries again


def run_all(
    cursor: ReplayCursor,
    signatures: list[Signature] | SignatureMap,
    *,
    max_concurrency: int | None = None,
    return_exceptions: bool = False,
    min_successful: int | None = None,
    tolerated_failures: int | None = None,
    positions: list[int] | None = None,
) -> list[Any]:
    """Run `signatures` as parallel branches and return their results in signature order.

    If the fan-out fails (a branch failed for good, or more than `tolerated_failures` did, or
    `min_successful` became unreachable) raises `StepFailed` for the first failed branch in
    the event log. Failed or cancelled branches of a successful fan-out appear in place as
    `StepFailed` objects. `min_successful` succeeds early and cancels the unfinished rest.
    `positions` are the branches' own when an async workflow took them at the call.
    """
    _check_signatures(signatures)
    rule = FanInRule.resolve(
        len(signatures),
        min_successful=min_successful,
        tolerated_failures=tolerated_failures,
        return_exceptions=return_exceptions,
    )
    window = initial_release(len(signatures), max_concurrency)
    if not signatures:
        return []
    if positions is None:
        positions = [cursor.next_position() for _ in range(len(signatures))]
    recorded = [cursor.recorded(p) for p in positions]
    if all(r is None for r in recorded):
        _start(cursor, signatures, positions, rule, window)
    cursor.identity_checked(functools.partial(_check, positions, recorded, signatures))
    branches = [r for r in recorded if r is not None]
    return _resume(cursor, rule, branches, positions[0])


def _check_signatures(signatures: list[Signature] | SignatureMap) -> None:
    if isinstance(signatures, SignatureMap):
        _check_registered(signatures.name, signatures.kind)
        return
    known: set[tuple[str, str]] = set()
    for sig in signatures:
        if not isinstance(sig, Signature):
            raise TypeError(
                f"ctx.all takes signatures (step_fn.s(...), workflow_fn.s(...)), got {sig!r}"
            )
        if (sig.name, sig.kind) not in known:
            known.add((sig.name, sig.kind))
            _check_registered(sig.name, sig.kind)


def _check_registered(name: str, kind: str) -> None:
    if kind == "step":
        registry.step(name)  # another worker must find it by name
    elif kind == "child":
        registry.workflow(name)
    else:
        raise TypeError(f"signature {name!r} has unknown kind {kind!r}")


def _identities(signatures: list[Signature] | SignatureMap) -> Iterable[tuple[str, str]]:
    """Each signature's (name, kind): a map's one pair, repeated."""
    if isinstance(signatures, SignatureMap):
        return repeat((signatures.name, signatures.kind), len(signatures))
    return ((sig.name, sig.kind) for sig in signatures)


def _start(
    cursor: ReplayCursor,
    signatures: list[Signature] | SignatureMap,
    positions: list[int],
    rule: FanInRule,
    window: int,
) -> None:
    """Record every branch and the group in one checkpoint, publish the first window, suspend."""
    now = cursor.clock.now()
    first = positions[0]
    rows: list[StepRow] = []
    events = []
    input_bytes = 0
    for index, (sig, position) in enumerate(zip(signatures, positions, strict=True)):
        sid = step_id(cursor.run_id, position)
        what = f"{'child workflow' if sig.kind == 'child' else 'step'} {sig.name!r} input"
        branch_input, size = cursor.checked(
            {"args": list(sig.args), "kwargs": dict(sig.kwargs)}, what
        )
        input_bytes += size
        # A released branch's wake_at is when it was dispatched (the sweep's lost-message clock).
        wake_at = now if index < window else None
        rows.append(StepRow(sid, position, sig.name, sig.kind, StepStatus.PENDING, 0, now,
                            input=branch_input, wake_at=wake_at))  # fmt: skip
        events.append(
            step_created(sid, position, sig.name, sig.kind, branch_input, now, fanout=first)
        )
    group = FanoutGroupRow(
        group_id(cursor.run_id, first), first, len(rows), window, rule.need, rule.failure_limit, now
    )
    write = HistoryWrite(
        cursor.run_id, cursor.session.guard, tuple(events), tuple(rows), fanouts=(group,)
    )
    cursor.checkpoint(write, sync=True, payload_bytes=input_bytes)
    for row in rows:
        cursor.remember(history.RecordedStep.of(row))
    dispatches = [BranchDispatch(p, 1) for p in positions[:window]]
    if window == len(positions) and _chunkable(signatures):
        dispatches = chunked(dispatches, conf.get().BRANCH_CHUNK)
    _publish(cursor, first, dispatches)
    raise Suspend(None)


def _chunkable(signatures: list[Signature] | SignatureMap) -> bool:
    """Whether the first dispatch may carry several branches a message (runtime.fanout.chunk):
    steps only (a child branch polls its child), none at most once (its claim must be durable
    on its own before its body) or rate-limited (each start waits for its own turn), and every
    branch released at once (a chunk would hold back slots of `max_concurrency`: the caller
    checks that)."""
    if conf.get().BRANCH_CHUNK < 2:
        return False
    kinds = set(_identities(signatures))
    if any(kind != "step" for _, kind in kinds):
        return False
    steps = [registry.step(name) for name, _ in kinds]
    return not any(fn.at_most_once or fn.rate_limit is not None for fn in steps)


def _resume(
    cursor: ReplayCursor, rule: FanInRule, branches: list[history.RecordedStep], first: int
) -> list[Any]:
    group = None
    if any(b.status == StepStatus.FAILED for b in branches):
        group = group_row(cursor.run_id, first)
    settled = settle(rule, branches, group.first_failure if group else None)
    if settled is None:
        cursor.before_dispatch()
        group = group or group_row(cursor.run_id, first)
        released = group.released if group is not None else len(branches)
        # This replay may follow a lost publish: republish what the queue cannot be holding.
        again = republish_rule(served_queue_depth(), replay=True)
        now = cursor.clock.now()
        due = due_dispatches(
            branches, first, released, now,
            pending_grace=again.grace, pending_budget=again.budget,
            queued=again.queued_for(functools.partial(_last_start, branches), now),
        )  # fmt: skip
        running = {b.position: b.name for b in branches if b.status == StepStatus.RUNNING}
        due = interrupt_at_most_once(cursor.run_id, first, running, due)
        _publish(cursor, first, due)
        record_dispatch(cursor.run_id, republished_pending(due, branches), now)
        raise Suspend(None)
    if settled.verdict == FAILED and settled.first_failure is not None:
        raise _step_failed(settled.first_failure)
    return [_step_failed(v) if isinstance(v, Failure) else v for v in settled.values]


def _publish(cursor: ReplayCursor, first: int, dispatches: list[BranchDispatch]) -> None:
    try:
        publish_branches(cursor.run_id, first, dispatches, cursor.priority)
    except PublishError as exc:
        if exc.retryable:
            # The branches are recorded: the run is delivered again shortly and replay
            # republishes the whole set; duplicates lose their claim.
            unsent = [p for d in dispatches if d.countdown <= 0 for p in d.positions]
            record_dispatch(cursor.run_id, unsent, None)
            log.warning(
                "run %s: publishing branches failed (%s); retrying in %ss",
                cursor.run_id,
                exc,
                REPUBLISH_DELAY,
            )
            raise Suspend(cursor.clock.now() + timedelta(seconds=REPUBLISH_DELAY)) from exc
        cursor.fail(exc)  # workflow code catching it must not hide a branch that can never leave
        raise


def _last_start(branches: list[history.RecordedStep]) -> datetime | None:
    return max((b.started_at for b in branches if b.started_at is not None), default=None)


def _step_failed(failure: Failure) -> StepFailed:
    return StepFailed.from_record(failure.name, failure.position, failure.error)


def _check(
    positions: list[int],
    recorded: list[history.RecordedStep | None],
    signatures: list[Signature] | SignatureMap,
) -> history.StepAction:
    """Every branch's record against its signature (one replay decision for the fan-out)."""
    identities = _identities(signatures)
    for position, rec, (name, kind) in zip(positions, recorded, identities, strict=True):
        if rec is None:
            raise NonDeterminismError(
                f"replay reached fan-out branch {kind} {name!r} at position {position}, "
                "but the history recorded a smaller fan-out there",
                position=position,
                differs="missing",
            )
        history.check_identity(rec, name, kind)
    return history.ReturnRecorded(None)
