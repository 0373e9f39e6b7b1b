"""Leases as rows: renewing the leases this process holds, giving one back, and reading the
wake-up count a suspend lost its race with."""

from __future__ import annotations

import uuid
from datetime import datetime

import psycopg

from runtime.models import Run, Step, StepStatus
from runtime.store.direct import open_direct
from runtime.store.lifecycle.liveness import lock_statement


def renew_run_leases(tokens: list[str], until: datetime) -> int:
    """Extend the leases of the runs held under `tokens` to `until`; how many were."""
    return Run.objects.filter(lease_token__in=tokens).update(lease_expires_at=until)


def renew_branch_leases(branches: list[tuple[uuid.UUID, uuid.UUID]], until: datetime) -> int:
    """Extend the leases of the running branches, (run id, step id) each, to `until`; how
    many were."""
    # The run ids let PostgreSQL read only their partitions, not every week's id index.
    runs, steps = {run_id for run_id, _ in branches}, [step_id for _, step_id in branches]
    return Step.objects.filter(run_id__in=runs, id__in=steps, status=StepStatus.RUNNING).update(
        wake_at=until
    )


def give_back_run_lease(run_id: uuid.UUID, token: str) -> None:
    """End the run's lease if `token` still holds it, so another claim may take the run."""
    Run.objects.filter(id=run_id, lease_token=token).update(lease_token=None, lease_expires_at=None)


def give_back_run_leases(held: list[tuple[uuid.UUID, str]]) -> None:
    """`give_back_run_lease` of several (run id, token), in one statement."""
    ids, tokens = [run_id for run_id, _ in held], [token for _, token in held]
    # Tokens are random per claim: one never matches another run's row.
    Run.objects.filter(id__in=ids, lease_token__in=tokens).update(
        lease_token=None, lease_expires_at=None
    )


def locked_connection(key: int) -> psycopg.Connection:
    """A new direct connection of this process's own (past any pooler: runtime.store.direct)
    holding the session advisory lock `key` until it is closed (the liveness lock:
    runtime.leases.liveness)."""
    raw = open_direct()
    try:
        raw.execute(lock_statement(), [key])
    except BaseException:
        raw.close()
        raise
    return raw
