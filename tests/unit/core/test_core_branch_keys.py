"""A branch write's key: what its receipt is filed under, never the object's identity."""

from __future__ import annotations

import copy
import pickle
import uuid

from runtime.core.branches import BranchClaim, receipt_key
from runtime.core.writes import HistoryWrite, UnfinishedGuard


def _claim() -> BranchClaim:
    return BranchClaim(run_id=uuid.UUID(int=1), step_id=uuid.UUID(int=2), attempt=1)


def test_branch_keys_are_distinct_for_equal_claims() -> None:
    # Two claims of the same step attempt in one batch: one wins, both get a receipt.
    first, second = _claim(), _claim()
    assert first == second
    assert receipt_key(first) != receipt_key(second)


def test_branch_keys_survive_a_copy() -> None:
    claim = _claim()
    assert receipt_key(copy.copy(claim)) == receipt_key(claim)
    assert receipt_key(pickle.loads(pickle.dumps(claim))) == receipt_key(claim)


def test_branch_keys_only_branch_writes_have_one() -> None:
    assert receipt_key(HistoryWrite(uuid.UUID(int=1), UnfinishedGuard())) is None
    assert receipt_key(None) is None
