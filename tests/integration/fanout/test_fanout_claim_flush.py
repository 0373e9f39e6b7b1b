"""Fresh claims commit without waiting for the WAL flush; at-most-once claims are confirmed."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Sequence

import pytest
from django.db import connection, transaction
from django.utils import timezone
from fanout_harness import Branches
from fanout_workflows import calls, completed_once

import runtime.fanout.branch
from runtime.core.branches import BranchClaim, ClaimReceipt
from runtime.core.identity import step_id
from runtime.executor import ExecutionOutcome, execute
from runtime.models import Run
from runtime.services import start_run
from runtime.store.dialect import execute as execute_statements
from runtime.store.fanout.branch_claims import ClaimBatch


def _started(workflow: str, n: int) -> uuid.UUID:
    run, _ = start_run(workflow, [n])
    assert execute(run.id).outcome is ExecutionOutcome.SUSPENDED
    return run.id


def _commit_setting(batch: ClaimBatch) -> str:
    """synchronous_commit as the batch's statements leave their transaction."""
    with transaction.atomic():
        execute_statements(batch.statements)
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('synchronous_commit')")
            (value,) = cursor.fetchone()
        transaction.set_rollback(True)
    return str(value)


def test_fanout_claim_batch_waits_for_the_flush_unless_told_and_fresh() -> None:
    run_id = _started("tests.fanout.squares", 2)
    now = timezone.now()
    fresh = [BranchClaim(run_id, step_id(run_id, 1), 1)]
    polls = [BranchClaim(run_id, step_id(run_id, 2), 1, continuing=True)]

    assert _commit_setting(ClaimBatch(fresh, now)) == "on"
    assert _commit_setting(ClaimBatch(fresh, now, wait_for_flush=False)) == "off"
    assert _commit_setting(ClaimBatch(polls, now, wait_for_flush=False)) == "on"


def _claims_written(monkeypatch: pytest.MonkeyPatch) -> Counter[bool]:
    """Counts the claims run_branch writes, by `continuing`."""
    written: Counter[bool] = Counter()
    real = runtime.fanout.branch.claim_branches

    def spy(claims: Sequence[BranchClaim]) -> list[ClaimReceipt]:
        for claim in claims:
            written[claim.continuing] += 1
        return real(claims)

    monkeypatch.setattr(runtime.fanout.branch, "claim_branches", spy)
    return written


def test_fanout_at_least_once_branch_claims_once(
    branches: Branches, monkeypatch: pytest.MonkeyPatch, fanfold_settings: Callable[..., None]
) -> None:
    # A message a branch: in a chunk the next claim rides in a report (test_fanout_chunks).
    fanfold_settings(BRANCH_CHUNK=1)
    run_id = _started("tests.fanout.squares", 3)
    written = _claims_written(monkeypatch)
    branches.drain()

    assert written == Counter({False: 3})
    assert execute(run_id).outcome is ExecutionOutcome.COMPLETED


def test_fanout_at_most_once_branch_confirms_its_claim_before_the_body(
    branches: Branches, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = _started("tests.fanout.charges", 3)
    written = _claims_written(monkeypatch)
    branches.drain(times=2)  # every message delivered twice: the copies lose their claims

    assert written == Counter({False: 6, True: 3})
    assert calls.counts == {0: 1, 1: 1, 2: 1}
    assert set(completed_once(run_id).values()) == {1}
    assert execute(run_id).outcome is ExecutionOutcome.COMPLETED
    assert Run.objects.get(id=run_id).result == [0, 1, 2]
