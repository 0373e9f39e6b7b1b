"""The demo's part that plays the person: wait for the agent's approval request, approve it."""

from __future__ import annotations

import time
import uuid

import examples.agents  # noqa: F401  (registers examples.support_agent)
from runtime.agents.approvals import approvals, decide


def approve_when_asked(run_id: uuid.UUID, timeout: float) -> str:
    """Approve the run's first pending approval once it is asked; returns what was approved."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pending = [a for a in approvals(run_id) if a.approved is None]
        if pending:
            decide(run_id, pending[0].id, True, by={"username": "demo"})
            return f"{pending[0].tool_name}({pending[0].arguments})"
        time.sleep(0.05)
    raise TimeoutError(f"run {run_id} asked for no approval in {timeout} s")
