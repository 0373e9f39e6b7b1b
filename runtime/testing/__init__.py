"""Test seams for Fanfold's own tests and for users testing their workflows (docs/testing.md).

- `WorkflowEnvironment`: runs, branches, children, schedules, Django tasks and agent steps of a
  test in its own process, on its own database, with every durable timer on a virtual clock;
  step and workflow mocks; the outside world delivered by the test. The pytest plugin
  (`runtime.pytest_plugin`, fixture `fanfold_env`) and `WorkflowTestCase` give one per test.
- `runtime.testing.agents`: scripted pydantic-ai and OpenAI Agents SDK models.
- `use_dispatcher(d)`, `InMemoryDispatcher`, `use_writer(sink=...)`, `callback_token(run_id,
  name=None)`, `replay(run_id)`: the lower seams (runtime.testing.seams).
"""

from __future__ import annotations

from runtime.core.waiting import Waiting
from runtime.testing.case import WorkflowTestCase
from runtime.testing.environment import RunBlocked, WorkflowEnvironment
from runtime.testing.seams import (
    InMemoryDispatcher,
    Mismatch,
    ReplayReport,
    SentBranch,
    SentRun,
    callback_token,
    replay,
    use_dispatcher,
    use_writer,
)

__all__ = [
    "InMemoryDispatcher",
    "Mismatch",
    "ReplayReport",
    "RunBlocked",
    "SentBranch",
    "SentRun",
    "Waiting",
    "WorkflowEnvironment",
    "WorkflowTestCase",
    "callback_token",
    "replay",
    "use_dispatcher",
    "use_writer",
]
